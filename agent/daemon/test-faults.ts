// Test-only faults for an agent (`svc-agent start --test-fault …`), so black-box tests can make a real
// provider slow, silent or endless, hold its event loop, make it fail mid-stream, call tools it was not offered, write its own error
// text, send the receipts a broken or dishonest provider would, or hold schemas to a smaller budget than the
// gateway's. Left out of the package (package.json "files"):
// an installed agent has no such flag (agent/cli.ts), and the session runner knows only the FaultInjection it is given.
import { randomBytes } from "node:crypto";
import { setImmediate as nextTurn, setTimeout as sleep } from "node:timers/promises";
import type { EngineStore, GenerateEvent, InferenceEngine } from "../engine/inference.ts";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ApiError } from "../../src/errors.ts";
import { nodeSha256Hex } from "../../src/crypto/sha256-node.ts";
import { payloadOf, signReceipt, type Receipt } from "../../src/receipt/receipt.ts";
import { Signer } from "../../src/crypto/signing.ts";
import type { FaultInjection } from "./session-runner.ts";

type ReceiptFault =
  /** Raise the usage after signing, as a provider padding its bill would: the signature breaks. */
  | { kind: "tamper" }
  /** Sign with a throwaway key instead of the attested one. */
  | { kind: "swap-key" }
  /** Sign, with the right key, a hash of content other than what was sent. */
  | { kind: "response-hash" }
  /** Send the receipt saved in this file (once it exists) instead of a fresh one. */
  | { kind: "replay"; path: string };

interface Faults {
  /** Pause after each delta, as a slow machine would. */
  tokenDelayMs?: number;
  /** Fail the session after this many deltas. */
  failAfterDeltas?: number;
  /** Wait this long before the first token (a long wait is a silent provider). */
  firstTokenDelayMs?: number;
  /** Hold the event loop this long before the first token, in one synchronous call, as a model's load can. */
  blockMs?: number;
  /** Never finish: after the answer, send deltas of this many characters until cancelled. */
  endlessChars?: number;
  /** Sign each token's logprob this many millinats lower than the engine read it: made-up values an audit must catch. */
  logprobShift?: number;
  /** Begin the answer with a call to this tool, offered or not. */
  toolCall?: string;
  /** Answer with an error frame of this code and text of the provider's own. */
  errorCode?: string;
  /** The `param` that error frame names (default `messages`): text of the provider's own too. */
  errorParam?: string;
  /** Spend at most this many steps on a session's schemas, grammar work included: what the gateway let through, it refuses. */
  schemaSteps?: number;
  receipt?: ReceiptFault;
  /** Write what this provider sees of each session into this directory: audits must look like callers. */
  recordDir?: string;
  /** Run this GGUF in place of the pinned one, its receipts still naming the pin: a substitute only a re-score shows. */
  substitute?: string;
  /** With `substitute`: run it on this fraction of sessions only, drawn per session (a provider that cheats sometimes). */
  cheat?: number;
}

/** What a provider reporting `errorCode` writes: no caller may ever read it. */
export const FAULT_ERROR_TEXT = "PROVIDER-WRITTEN TEXT: your request is wrong, fix it";

const USAGE = "token-delay-ms=N, fail-after=N, first-token-delay-ms=N, block-ms=N, endless=CHARS, tool-call=NAME, error=CODE, error-param=TEXT, schema-steps=N, logprob-shift=MILLINATS, record=DIR, substitute=PATH, cheat=FRACTION (with substitute), receipt=tamper|swap-key|response-hash|replay:FILE";

/** `token-delay-ms=50,fail-after=3,receipt=replay:/tmp/r.json`. */
function parseFaults(spec: string): Faults {
  const faults: Faults = {};
  for (const part of spec.split(",").filter(Boolean)) {
    const eq = part.indexOf("=");
    const [name, raw] = eq === -1 ? [part, ""] : [part.slice(0, eq), part.slice(eq + 1)];
    if (name === "receipt") {
      faults.receipt = parseReceiptFault(raw, part);
      continue;
    }
    if (name === "record") {
      if (raw === "") throw new Error(`--test-fault ${part}: expected record=DIR`);
      faults.recordDir = raw;
      continue;
    }
    if (name === "substitute") {
      if (raw === "" || !existsSync(raw)) throw new Error(`--test-fault ${part}: expected substitute=PATH of a GGUF file`);
      faults.substitute = raw;
      continue;
    }
    if (name === "cheat") {
      const fraction = Number(raw);
      if (raw === "" || !(fraction > 0 && fraction <= 1)) throw new Error(`--test-fault ${part}: expected cheat=FRACTION in (0, 1]`);
      faults.cheat = fraction;
      continue;
    }
    if (name === "tool-call" || name === "error" || name === "error-param") {
      if (raw === "") throw new Error(`--test-fault ${part}: expected ${name}=NAME`);
      if (name === "tool-call") faults.toolCall = raw;
      else if (name === "error") faults.errorCode = raw;
      else faults.errorParam = raw;
      continue;
    }
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 0) throw new Error(`--test-fault ${part}: expected NAME=non-negative integer`);
    if (name === "token-delay-ms") faults.tokenDelayMs = value;
    else if (name === "fail-after") faults.failAfterDeltas = value;
    else if (name === "first-token-delay-ms") faults.firstTokenDelayMs = value;
    else if (name === "block-ms") faults.blockMs = value;
    else if (name === "endless") faults.endlessChars = value;
    else if (name === "schema-steps") faults.schemaSteps = value;
    else if (name === "logprob-shift") faults.logprobShift = value;
    else throw new Error(`--test-fault ${part}: unknown fault (${USAGE})`);
  }
  if (faults.cheat !== undefined && faults.substitute === undefined) throw new Error(`--test-fault cheat=${faults.cheat}: cheat needs substitute=PATH (${USAGE})`);
  return faults;
}

function parseReceiptFault(raw: string, part: string): ReceiptFault {
  if (raw === "tamper" || raw === "swap-key" || raw === "response-hash") return { kind: raw };
  if (raw.startsWith("replay:") && raw.length > "replay:".length) return { kind: "replay", path: raw.slice("replay:".length) };
  throw new Error(`--test-fault ${part}: unknown receipt fault (${USAGE})`);
}

/** What `--test-fault SPEC` makes of a session: the hooks the session runner calls. */
export function faultInjection(spec: string, random: () => number = Math.random): FaultInjection {
  const faults = parseFaults(spec);
  const { substitute, cheat = 1 } = faults;
  return {
    engine: substitute === undefined ? undefined : (build, store) => substitutedEngine(build, store, substitute, cheat, random),
    error: faults.errorCode === undefined ? undefined : { code: faults.errorCode, message: FAULT_ERROR_TEXT, param: faults.errorParam ?? "messages" },
    schemaSteps: faults.schemaSteps,
    events: (events, signal) => faultyEvents(events, faults, signal),
    receipt: (honest, signer) => (faults.receipt ? faultyReceipt(honest, signer, faults.receipt) : honest),
    ...(faults.recordDir === undefined ? {} : { opened: recordSession(faults.recordDir) }),
  };
}

/**
 * The engine of a provider that runs `path` in place of the pinned file on `fraction` of its sessions, drawn per
 * session. The substitute is handed out under the pin's SHA-256, so its receipts name the pinned model and verify.
 */
function substitutedEngine(build: (store: EngineStore) => InferenceEngine, store: EngineStore, path: string, fraction: number, random: () => number): InferenceEngine {
  const swapped = build({ verify: async (alias) => ({ path, sha256: (await store.verify(alias)).sha256 }) });
  if (fraction >= 1) return swapped;
  const honest = build(store);
  return {
    generate: (turn, signal) => (random() < fraction ? swapped : honest).generate(turn, signal),
    ...(honest.embed ? { embed: honest.embed.bind(honest) } : {}),
    dispose: async () => void (await Promise.all([honest.dispose(), swapped.dispose()])),
  };
}

/** The engine's events as a faulty provider sends them: late, slow, failing, with a tool call of its choosing, or without end. */
async function* faultyEvents(events: AsyncIterable<GenerateEvent>, faults: Faults, signal: AbortSignal): AsyncGenerator<GenerateEvent, void, void> {
  if (faults.firstTokenDelayMs) await sleep(faults.firstTokenDelayMs, undefined, { signal });
  if (faults.blockMs) {
    // nothing else on this thread runs meanwhile: no timer, no read, no write
    const until = performance.now() + faults.blockMs;
    while (performance.now() < until);
  }
  let deltas = 0;
  /** Each piece of the answer, failing once `failAfterDeltas` are out and paced by `tokenDelayMs` once taken. */
  async function* piece(event: GenerateEvent): AsyncGenerator<GenerateEvent, void, void> {
    if (faults.failAfterDeltas !== undefined && deltas >= faults.failAfterDeltas) throw new ApiError("provider_error", "The provider failed mid-session (test fault).");
    deltas++;
    yield event;
    if (faults.tokenDelayMs) await sleep(faults.tokenDelayMs, undefined, { signal });
  }
  if (faults.toolCall !== undefined) {
    yield* piece({ type: "tool_call", index: 0, id: "call_fault", name: faults.toolCall });
    yield* piece({ type: "tool_args", index: 0, text: "{}" });
  }
  for await (const event of events) {
    if (event.type === "done" && faults.endlessChars !== undefined) {
      const text = "x".repeat(faults.endlessChars);
      for (;;) {
        signal.throwIfAborted();
        yield* piece({ type: "delta", text });
        await nextTurn(); // one frame per turn, and room to hear the cancel
      }
    }
    if (event.type === "done") yield event;
    else if (event.type === "logprobs" && faults.logprobShift) {
      // a liar's values, signed as its own: the receipt covers them, only a re-score shows them false
      const shift = faults.logprobShift / 1000;
      yield* piece({ ...event, logprobs: event.logprobs.map((entry) => ({ ...entry, logprob: entry.logprob - shift })) });
    } else yield* piece(event);
  }
}

/**
 * `record=DIR`: one file per session, `ID.json`, holding all a provider sees of it: when it arrived, the session
 * message's clear fields (its keys, id, alias, whole, and the sealed parts' lengths) and the plaintext JSON it opened to, as sent.
 */
function recordSession(dir: string): NonNullable<FaultInjection["opened"]> {
  mkdirSync(dir, { recursive: true });
  return (message, plaintext, at) => {
    const clear: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(message)) clear[key] = key === "enc" || key === "ct" ? { length: (value as string).length } : value;
    const seen = { at, keys: Object.keys(message).sort(), clear, plaintext: Buffer.from(plaintext).toString("utf8") };
    // written whole and then renamed, so a reader never sees half a file
    const partial = join(dir, `.${message.id}.partial`);
    writeFileSync(partial, JSON.stringify(seen));
    renameSync(partial, join(dir, `${message.id}.json`));
  };
}

/** What the faulty provider sends in place of its honest receipt. */
function faultyReceipt(honest: Receipt, signer: Signer, fault: ReceiptFault): unknown {
  const payload = payloadOf(honest);
  switch (fault.kind) {
    case "tamper": {
      const { prompt_tokens, completion_tokens } = honest.usage;
      return { ...honest, usage: { prompt_tokens, completion_tokens: completion_tokens + 1, total_tokens: prompt_tokens + completion_tokens + 1 } };
    }
    case "swap-key":
      return signReceipt(Signer.fromSeed(randomBytes(32)), payload);
    case "response-hash":
      return signReceipt(signer, { ...payload, response_sha256: nodeSha256Hex(`${randomBytes(8).toString("hex")} was not sent`) });
    case "replay":
      return existsSync(fault.path) ? (JSON.parse(readFileSync(fault.path, "utf8")) as unknown) : honest;
  }
}
