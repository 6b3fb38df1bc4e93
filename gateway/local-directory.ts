// A directory of one provider that lives in the gateway's own process and runs the real engine: what
// `svc-gateway serve --model ALIAS=PATH` uses until providers connect through the coordinator.
import { createHash, randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Engine } from "../agent/engine.ts";
import { ModelFileError, type ModelStore } from "../agent/model-store.ts";
import { ApiError } from "../src/errors.ts";
import type { Directory, ProviderRecord, Receipt, SessionEvent, SessionRequest, Usage } from "./directory.ts";

/** Test-only faults (`--test-fault`), so black-box tests can make a provider slow or fail mid-stream. */
export interface LocalFaults {
  /** Pause after each delta, as a slow machine would. */
  tokenDelayMs?: number;
  /** Fail the session after this many deltas. */
  failAfterDeltas?: number;
}

export interface LocalDirectoryOptions {
  engine: Engine;
  store: ModelStore;
  memoryGb: number;
  faults?: LocalFaults;
}

export class LocalDirectory implements Directory {
  /** Shaped like a real provider id (DESIGN §4), from a key that lives as long as this process. */
  readonly id = createHash("sha256").update(randomBytes(32)).digest("hex");
  /** The aliases it serves: catalog files present that fit in its memory. */
  readonly aliases: readonly string[];

  constructor(private readonly options: LocalDirectoryOptions) {
    this.aliases = options.store.offered(options.memoryGb);
  }

  list(): Promise<ProviderRecord[]> {
    const { engine } = this.options;
    return Promise.resolve([
      { id: this.id, model_ids: [...this.aliases], trust: "process", busy: engine.busy, waiting: engine.waiting },
    ]);
  }

  async *open(request: SessionRequest, signal: AbortSignal): AsyncGenerator<SessionEvent, void, void> {
    if (request.providerId !== this.id) {
      throw new ApiError("provider_unavailable", `Provider ${request.providerId} is not online.`);
    }
    const { engine, faults = {} } = this.options;
    let deltas = 0;
    try {
      const events = engine.generate({ ...request, signal });
      for await (const event of events) {
        if (event.type === "delta") {
          if (faults.failAfterDeltas !== undefined && deltas >= faults.failAfterDeltas) {
            throw new ApiError("provider_error", "The provider failed mid-session (test fault).");
          }
          deltas++;
          yield event;
          if (faults.tokenDelayMs) await sleep(faults.tokenDelayMs, undefined, { signal });
          continue;
        }
        const usage = {
          prompt_tokens: event.prompt_tokens,
          completion_tokens: event.completion_tokens,
          total_tokens: event.prompt_tokens + event.completion_tokens,
        };
        const receipt = this.receipt(request, event.model_sha256, usage, event.finish_reason);
        yield { type: "done", finish_reason: event.finish_reason, usage, receipt };
      }
    } catch (err) {
      throw signal.aborted ? signal.reason : providerError(err);
    }
  }

  /** Unsigned until receipts land: the facts the gateway reports, in the shape the signed one will have. */
  private receipt(request: SessionRequest, modelSha256: string, usage: Usage, finish: string): Receipt {
    const entry = this.options.store.entry(request.model);
    return {
      id: `rcpt_${randomBytes(12).toString("hex")}`,
      created: Math.floor(Date.now() / 1000),
      provider_id: this.id,
      trust_level: "process",
      model_id: entry.alias,
      model_hub_id: entry.hub_id,
      model_revision: entry.revision,
      model_sha256: modelSha256,
      usage,
      finish_reason: finish,
    };
  }

  async close(): Promise<void> {
    await this.options.engine.dispose();
  }
}

function providerError(err: unknown): unknown {
  if (err instanceof ApiError) return err;
  // a pinned file that fails its check is the provider's fault, not the caller's
  const why = err instanceof ModelFileError ? err.message : "the provider failed while serving the request";
  return new ApiError("provider_error", `Provider error: ${why}.`);
}

/** `--test-fault token-delay-ms=50,fail-after=3`. */
export function parseFaults(spec: string): LocalFaults {
  const faults: LocalFaults = {};
  for (const part of spec.split(",").filter(Boolean)) {
    const [name, raw] = part.split("=");
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 0) throw new Error(`--test-fault ${part}: expected NAME=non-negative integer`);
    if (name === "token-delay-ms") faults.tokenDelayMs = value;
    else if (name === "fail-after") faults.failAfterDeltas = value;
    else throw new Error(`--test-fault ${part}: unknown fault (token-delay-ms, fail-after)`);
  }
  return faults;
}
