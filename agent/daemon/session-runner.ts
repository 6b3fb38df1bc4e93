// Runs one sealed session on the agent (DESIGN §5, §10): opens the request with the agent's sealing key (sealed by
// the gateway, or by the caller itself in gateway-blind mode: session-channel.ts), runs it on the engine, seals every
// frame back under the session's key and ends with a signed receipt.
import { ApiError } from "../../src/errors.ts";
import { nodeSha256Hex } from "../../src/crypto/sha256-node.ts";
import { AnswerRecord } from "../../src/receipt/answer-record.ts";
import { newReceiptId, reasoningSha256, RECEIPT_VERSION_CACHE, RECEIPT_VERSION_LOGPROBS, signReceipt, toolCallsSha256, type ReceiptPayload } from "../../src/receipt/receipt.ts";
import { logprobsSha256 } from "../../src/receipt/logprobs.ts";
import type { SessionPlaintext } from "../../src/session/sealed-request.ts";
import type { CatalogEntry } from "../../src/catalog.ts";
import type { TrustLevel } from "../../src/receipt/rungs.ts";
import type { FromAgent } from "../../src/wire/agent.ts";
import type { EngineStore, GenerateEvent, GenerationDone, InferenceEngine } from "../engine/inference.ts";
import type { Signer } from "../../src/crypto/signing.ts";
import type { Receipt } from "../../src/receipt/receipt.ts";
import { planTurn } from "../engine/turn.ts";
import { embeddingEvents } from "../engine/embedder.ts";
import { FrameBatcher } from "./frame-batcher.ts";
import { openChannel, type SessionChannel, type SessionMessage } from "./session-channel.ts";
import type { AgentKeys } from "./identity.ts";
import { ModelFileError, type ModelStore } from "../models/store.ts";

/**
 * What a test-only faulty provider changes in a session (`--test-fault`, agent/daemon/test-faults.ts, which the package
 * leaves out): an honest agent has none.
 */
export interface FaultInjection {
  /** Answer with this error, in the provider's own words, instead of running the request. */
  error?: { code: string; message: string; param: string };
  /** Spend at most this many steps on a session's schemas: a budget smaller than the gateway's. */
  schemaSteps?: number | undefined;
  /** The engine's events as the faulty provider sends them. */
  events(events: AsyncIterable<GenerateEvent>, signal: AbortSignal): AsyncIterable<GenerateEvent>;
  /** What it sends in place of its honest receipt. */
  receipt(honest: Receipt, signer: Signer): unknown;
  /** The session message as it arrived at `at` (ms since the epoch), and the plaintext it opened to. */
  opened?(message: SessionMessage, plaintext: Uint8Array, at: number): void;
  /** The engine it runs, made with `build` on stores of its choosing (another GGUF under the pinned name); else `build(store)`. */
  engine?(build: (store: EngineStore) => InferenceEngine, store: EngineStore): InferenceEngine;
}

export interface SessionContext {
  keys: AgentKeys;
  engine: InferenceEngine;
  store: ModelStore;
  /** The aliases this agent advertises; it serves nothing else. */
  advertised: readonly string[];
  /** The rung the coordinator granted on this connection. */
  grant: { rung: TrustLevel; serial?: string };
  faults?: FaultInjection;
  send(message: FromAgent): void;
  /** Undefined while the link keeps up with what was sent; else settles once it has caught up (link-thread.ts). */
  congestion?(): Promise<void> | undefined;
  log(line: string): void;
  /** A model file failed its pin when loaded (replaced since start): the alias is advertised no more. */
  withdraw?(alias: string, why: string): void;
}

export async function runSession(message: SessionMessage, ctx: SessionContext, signal: AbortSignal): Promise<void> {
  const { id } = message;
  const started = Date.now();
  const taken = performance.now();
  let channel: SessionChannel | undefined;
  let endError: { error: string; code?: string } | undefined;
  const emit = (frame: Parameters<SessionChannel["send"]>[0]) => channel!.send(frame);
  const batch = new FrameBatcher(emit, "blind" in message ? !message.blind.stream : message.whole === true);
  ctx.log(`session ${id} start (${message.alias}${"blind" in message ? ", sealed by the caller" : ""})`);
  try {
    channel = await openChannel(message, ctx.keys, ctx.send, ctx.log);
    ctx.faults?.opened?.(message, channel.plaintext, started);
    if (!ctx.advertised.includes(message.alias)) throw new ApiError("provider_error", `This provider does not serve ${message.alias}.`);
    const request = channel.request(ctx.store.entry(message.alias));
    if (request.model !== message.alias) throw new ApiError("provider_error", `This provider does not serve ${request.model}.`);
    const { faults } = ctx;
    if (faults?.error !== undefined) return emit({ type: "error", ...faults.error });
    let firstTokenMs: number | undefined;
    // exactly what the gateway will return, which the receipt covers
    const answer = new AnswerRecord();
    const events =
      request.input === undefined ? ctx.engine.generate(planTurn(request, { schemaSteps: faults?.schemaSteps }), signal) : embeddingEvents(ctx.engine, request, signal);
    for await (const event of faults ? faults.events(events, signal) : events) {
      if (event.type !== "done") {
        firstTokenMs ??= performance.now() - taken;
        answer.add(event);
        batch.push(event);
        const congested = ctx.congestion?.();
        if (congested) await congested;
        continue;
      }
      const payload = receiptPayload({ entry: ctx.store.entry(request.model), providerId: ctx.keys.providerId, grant: ctx.grant }, request, event, nodeSha256Hex(channel.plaintext), answer);
      const receipt = signReceipt(ctx.keys.signer, payload);
      batch.done({
        type: "done",
        receipt: faults ? faults.receipt(receipt, ctx.keys.signer) : receipt,
        first_token_ms: Math.round((firstTokenMs ?? performance.now() - taken) * 100) / 100,
      });
      const seconds = (Date.now() - started) / 1000;
      ctx.log(`session ${id} end: ${event.finish_reason}, ${event.completion_tokens} tokens in ${seconds.toFixed(2)} s (${(event.completion_tokens / seconds).toFixed(1)} tok/s)`);
    }
  } catch (err) {
    if (err instanceof ModelFileError) ctx.withdraw?.(message.alias, err.message);
    if (signal.aborted) {
      batch.drop();
      ctx.log(`session ${id} end: cancelled`);
    } else if (channel) {
      const error = reportable(err);
      batch.flush(); // what the caller already has in a stream comes before the error
      emit({ type: "error", code: error.code, message: error.message, param: error.param });
      ctx.log(`session ${id} end: ${error.code}: ${error.message}`);
    } else {
      // without the session key nothing can be said in private; the coordinator (and a blind caller's gateway) learns only this
      endError = { error: "the sealed request did not open with this provider's key", ...("blind" in message ? { code: "sealed_request_invalid" } : {}) };
      ctx.log(`session ${id} end: ${endError.error}`);
    }
  } finally {
    await channel?.drained();
    ctx.send({ t: "end", id, ...endError });
  }
}

/**
 * DESIGN §5's payload: who served (key, rung, serial), which model file, which request bytes and which answer.
 * v3: it covers tool calls and reasoning (null when none) and states the prompt tokens reused from the cache; v4 when
 * the request asked for logprobs, which it covers too: every token's, and those before content text.
 */
export function receiptPayload(
  { entry, providerId, grant }: { entry: CatalogEntry; providerId: string; grant: SessionContext["grant"] },
  request: SessionPlaintext,
  done: GenerationDone,
  requestSha256: string,
  answer: AnswerRecord,
): ReceiptPayload {
  const usage = {
    prompt_tokens: done.prompt_tokens,
    completion_tokens: done.completion_tokens,
    total_tokens: done.prompt_tokens + done.completion_tokens,
  };
  const common = {
    id: newReceiptId(),
    created: Math.floor(Date.now() / 1000),
    provider_id: providerId,
    trust_level: grant.rung,
    ...(grant.rung === "hardware" && grant.serial !== undefined ? { serial: grant.serial } : {}),
    model_id: entry.alias,
    model_hub_id: entry.hub_id,
    model_revision: entry.revision,
    model_sha256: done.model_sha256,
    request_sha256: requestSha256,
    response_sha256: nodeSha256Hex(answer.content),
    gateway_nonce: request.nonce,
    client_nonce: request.client_nonce,
  };
  if (request.tools === undefined && done.finish_reason === "tool_calls") throw new Error("the engine reported tool calls for a request without tools");
  const v3 = {
    ...common,
    usage: done.reasoning_tokens === undefined ? usage : { ...usage, completion_tokens_details: { reasoning_tokens: done.reasoning_tokens } },
    finish_reason: done.finish_reason,
    tool_calls_sha256: toolCallsSha256(answer.toolCalls),
    reasoning_sha256: reasoningSha256(answer.reasoning),
    cached_tokens: done.cached_tokens,
  };
  if (request.top_logprobs === undefined) return { version: RECEIPT_VERSION_CACHE, ...v3 };
  return { version: RECEIPT_VERSION_LOGPROBS, ...v3, logprobs_sha256: logprobsSha256(answer.logprobs), content_logprobs_sha256: logprobsSha256(answer.contentLogprobs) };
}

function reportable(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const why = err instanceof ModelFileError ? err.message : "the provider failed while serving the request";
  return new ApiError("provider_error", `Provider error: ${why}.`);
}
