// What a provider may send back for one session (DESIGN §8): no more pieces than the request's token cap allows,
// no more bytes than a bound derived from it, and tool calls only to the tools offered, within tool_choice. A
// breach is the provider's fault: it ends the session and never reaches the caller. Plain state, no I/O, so the
// same bounds hold whatever carries the frames, and whoever opens them (the gateway, or a caller's client: DESIGN §10).
import type { AnswerPiece } from "../receipt/answer-record.ts";
import { MAX_TOOL_CALLS } from "../receipt/answer-record.ts";
import { logprobsSize, tokenStringProblem, type TokenLogprob } from "../receipt/logprobs.ts";
import { answerTokenCap, type SessionPlaintext } from "./sealed-request.ts";
import { LOGPROB_BYTES_PER_ENTRY } from "./logprobs.ts";
import { embeddingsContentLength } from "../receipt/embedding-vectors.ts";

/** A provider's answer past its bounds, or broken: what it did, in svc's words (the gateway charges it as a fault). */
export interface AnswerBreach {
  kind: "answer_bounds" | "tool_call" | "broken";
  why: string;
}

const tooMuch = (why: string): AnswerBreach => ({ kind: "answer_bounds", why });
const toolFault = (why: string): AnswerBreach => ({ kind: "tool_call", why });

/**
 * The longest answer any catalog model's context can hold: the cap when `max_tokens` asks for more, until the
 * gateway knows each model's context.
 */
export const MAX_ANSWER_TOKENS = 131_072;
/** Generous for any tokenizer's longest token, in UTF-8 bytes: the byte bound is this many per token. */
export const BYTES_PER_TOKEN = 128;
/** Pieces beyond one per token an honest engine may send: a tool call's opening, and a stop buffer's release. */
const PIECE_SLACK = 2 * MAX_TOOL_CALLS + 16;
/** Sealed, base64 frames cost more than their text: JSON framing, the AEAD tag, a third for base64. */
const WIRE_BYTES_PER_PIECE = 96;
/** The receipt and the closing frame, which carry no answer text. */
const WIRE_ALLOWANCE = 1024 * 1024;
/**
 * Sealed bytes one logprob entry (a token or an alternative) may take beyond its token's own bytes: its JSON keys,
 * id and number, with base64 on top. A token's bytes are counted apart (LOGPROB_BYTES_PER_ENTRY each on average),
 * written twice in at most ten characters a byte (`token` escaped, `bytes` as numbers), a third more in base64.
 */
const WIRE_BYTES_PER_ENTRY = 160;
const WIRE_BYTES_PER_ENTRY_BYTE = 14;

export interface AnswerLimits {
  /** Pieces (about one per token) the answer may have, logprobs pieces aside. */
  pieces: number;
  /** UTF-8 bytes of text, tool names and call ids together. */
  bytes: number;
  /** Sealed frame bytes, as relayed, the session may receive (and so the most buffered for a slow reader). */
  wireBytes: number;
  /** Completion tokens the receipt may claim. */
  tokens: number;
  /** Logprobs: alternatives per token (absent when the request asked for none), and token bytes over all entries. */
  logprobs?: { top: number; bytes: number };
}

/** The bounds one request earns from its `max_tokens` (capped by MAX_ANSWER_TOKENS), or an embeddings session from its exact size. */
export function answerLimits(request: Pick<SessionPlaintext, "max_tokens" | "input" | "dimensions" | "top_logprobs">): AnswerLimits {
  if (request.input !== undefined) {
    // one piece per vector, of known length, and no completion tokens
    const count = request.input.length;
    const bytes = embeddingsContentLength(count, request.dimensions ?? 0);
    return { tokens: 0, pieces: count + 1, bytes, wireBytes: 2 * bytes + (count + 1) * WIRE_BYTES_PER_PIECE + WIRE_ALLOWANCE };
  }
  const tokens = Math.min(answerTokenCap(request), MAX_ANSWER_TOKENS);
  const pieces = tokens + PIECE_SLACK;
  const bytes = tokens * BYTES_PER_TOKEN;
  const wireBytes = 2 * bytes + pieces * WIRE_BYTES_PER_PIECE + WIRE_ALLOWANCE;
  if (request.top_logprobs === undefined) return { tokens, pieces, bytes, wireBytes };
  // each token's entry and its alternatives (the parser held tokens × (1 + top) to MAX_LOGPROB_ENTRIES)
  const entries = tokens * (1 + request.top_logprobs);
  const logprobs = { top: request.top_logprobs, bytes: entries * LOGPROB_BYTES_PER_ENTRY };
  return { tokens, pieces, bytes, logprobs, wireBytes: wireBytes + entries * WIRE_BYTES_PER_ENTRY + logprobs.bytes * WIRE_BYTES_PER_ENTRY_BYTE };
}

/** What a piece adds to the answer's text, tool names and call ids, in UTF-8 bytes (logprob entries as their JSON's size). */
export function pieceBytes(piece: AnswerPiece): number {
  if (piece.type === "logprobs") return logprobsSize(piece.logprobs);
  return piece.type === "tool_call" ? utf8Length(piece.name) + utf8Length(piece.id) : utf8Length(piece.text);
}

/** Counts one session's answer against its limits and the request's tool rules; each method returns a breach, or undefined. */
export class AnswerBounds {
  private pieces = 0;
  private bytes = 0;
  private calls = 0;
  private entries = 0;
  private entryBytes = 0;
  readonly limits: AnswerLimits;
  private readonly offered: ReadonlySet<string>;

  constructor(private readonly request: Pick<SessionPlaintext, "max_tokens" | "tools" | "tool_choice" | "parallel_tool_calls" | "input" | "dimensions" | "top_logprobs">) {
    this.limits = answerLimits(request);
    this.offered = new Set((request.tools ?? []).map((t) => t.function.name));
  }

  /** One piece as it arrives, before it is relayed. */
  piece(piece: AnswerPiece): AnswerBreach | undefined {
    if (piece.type === "logprobs") return this.logprobs(piece.logprobs);
    this.pieces++;
    this.bytes += pieceBytes(piece);
    const vectors = this.request.input?.length;
    if (this.pieces > this.limits.pieces) {
      return tooMuch(vectors === undefined ? `sent more than the ${this.limits.tokens} tokens max_tokens allows` : `sent more pieces than the ${vectors} vectors asked for`);
    }
    if (this.bytes > this.limits.bytes) {
      return tooMuch(`sent more than the ${this.limits.bytes} bytes ${vectors === undefined ? `${this.limits.tokens} tokens can hold` : `${vectors} vectors take`}`);
    }
    return piece.type === "tool_call" ? this.toolCall(piece.name) : undefined;
  }

  /** Entries only when asked for, one per token at most, each with the alternatives asked for, their strings their bytes'. */
  private logprobs(entries: readonly TokenLogprob[]): AnswerBreach | undefined {
    const asked = this.limits.logprobs;
    if (asked === undefined) return tooMuch("sent logprobs the request did not ask for");
    this.entries += entries.length;
    if (this.entries > this.limits.tokens) return tooMuch(`sent logprobs for more than the ${this.limits.tokens} tokens max_tokens allows`);
    for (const entry of entries) {
      if (entry.top_logprobs.length > asked.top) return tooMuch(`sent more than the ${asked.top} top_logprobs asked for`);
      for (const alt of [entry, ...entry.top_logprobs]) this.entryBytes += alt.bytes.length;
    }
    if (this.entryBytes > asked.bytes) return tooMuch(`sent logprobs of more than the ${asked.bytes} token bytes its answer can hold`);
    const problem = tokenStringProblem(entries);
    return problem === undefined ? undefined : { kind: "broken", why: `sent a broken answer (${problem})` };
  }

  private toolCall(name: string): AnswerBreach | undefined {
    this.calls++;
    const choice = this.request.tool_choice;
    if (!this.offered.has(name)) return toolFault("called a tool the request did not offer");
    if (choice === "none") return toolFault('called a tool although tool_choice is "none"');
    if (typeof choice === "object" && choice.function.name !== name) return toolFault(`called another tool than the ${choice.function.name} tool_choice forces`);
    if (this.request.parallel_tool_calls === false && this.calls > 1) return toolFault("called more than one tool although parallel_tool_calls is false");
    return undefined;
  }

  /** The answer is complete: a forced tool choice must have been followed (unless max_tokens cut it short), the receipt's count kept to the cap. */
  done(completionTokens: number, finishReason: string): AnswerBreach | undefined {
    const choice = this.request.tool_choice;
    const forced = choice === "required" || typeof choice === "object";
    if (forced && this.request.tools !== undefined && this.calls === 0 && finishReason !== "length") return toolFault("answered without the tool call tool_choice requires");
    if (completionTokens > this.limits.tokens) return tooMuch(`claimed ${completionTokens} completion tokens, more than the ${this.limits.tokens} max_tokens allows`);
    return undefined;
  }
}

/** Counts the sealed bytes relayed for one session, as they arrive (before the session reads them). */
export class WireBudget {
  private received = 0;

  constructor(private readonly limit: number) {}

  /** False once the session has been sent more than its limit. */
  take(bytes: number): boolean {
    this.received += bytes;
    return this.received <= this.limit;
  }
}

/** A string's length in UTF-8 bytes, as node's Buffer.byteLength counts it (a lone surrogate is U+FFFD's three), in any runtime. */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}
