// The OpenAI response objects we send (SPEC §2.2, §2.3): a completion body and the stream's chunks. Pure
// functions of plain values, so framing tests need no server.
import { randomBase64url } from "./ids.ts";
import type { AnswerPiece, AnswerRecord } from "../receipt/answer-record.ts";
import type { TokenLogprob } from "../receipt/logprobs.ts";
import { reportedUsage, type FinishReason, type Receipt } from "../receipt/receipt.ts";

export interface CompletionMeta {
  id: string;
  /** Unix seconds; one value for every chunk of a stream. */
  created: number;
  /** The request's `model` value, echoed (SPEC §2.2). */
  model: string;
}

/** What the gateway reports about who served a request (headers, and the stop chunk's `x_svc_*` fields). */
export interface Verdict {
  trust: string;
  model: string;
  provider: string;
}

export function newCompletionMeta(model: string, now = Date.now()): CompletionMeta {
  return { id: `chatcmpl-${randomBase64url(16)}`, created: Math.floor(now / 1000), model };
}

export function verdictOf(receipt: Receipt): Verdict {
  return { trust: receipt.trust_level, model: receipt.model_id, provider: receipt.provider_id };
}

/** OpenAI's `choices[0].logprobs`: every generated token's entry, as llama-server lists them under `content`. */
const logprobsOf = (entries: readonly TokenLogprob[]) => ({ content: entries, refusal: null });

/**
 * SPEC §2.2; `finish_reason` and `usage` come from the verified receipt. `reasoning_content` and `tool_calls`
 * appear only when the answer has them, as OpenAI, DeepSeek and llama-server send them; `logprobs` only when asked.
 */
export function completionBody(meta: CompletionMeta, answer: AnswerRecord, receipt: Receipt, logprobs = false) {
  const message = {
    role: "assistant",
    content: answer.messageContent,
    ...(answer.reasoning === null ? {} : { reasoning_content: answer.reasoning }),
    ...(answer.toolCalls.length === 0 ? {} : { tool_calls: answer.toolCalls }),
  };
  return {
    id: meta.id,
    object: "chat.completion",
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, message, finish_reason: receipt.finish_reason, ...(logprobs ? { logprobs: logprobsOf(answer.logprobs) } : {}) }],
    usage: reportedUsage(receipt),
    svc_receipt: receipt,
  };
}

function chunk(meta: CompletionMeta, delta: Record<string, unknown>, finishReason: FinishReason | null, logprobs?: readonly TokenLogprob[]) {
  return {
    id: meta.id,
    object: "chat.completion.chunk",
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, delta, ...(logprobs === undefined ? {} : { logprobs: logprobsOf(logprobs) }), finish_reason: finishReason }],
  };
}

/** SPEC §3 step 1. */
export function roleChunk(meta: CompletionMeta) {
  return chunk(meta, { role: "assistant", content: "" }, null);
}

/** SPEC §3 step 2. */
export function contentChunk(meta: CompletionMeta, text: string) {
  return chunk(meta, { content: text }, null);
}

/**
 * A piece of the answer as a stream chunk: content, `reasoning_content` (DeepSeek's and llama-server's delta
 * field), or OpenAI's tool-call deltas: index, id, type and name first, then `arguments` pieces; with the logprobs
 * of the tokens that came before it, when there are any.
 */
export function pieceChunk(meta: CompletionMeta, piece: Exclude<AnswerPiece, { type: "logprobs" }>, logprobs?: readonly TokenLogprob[]) {
  switch (piece.type) {
    case "delta":
      return chunk(meta, { content: piece.text }, null, logprobs);
    case "reasoning":
      return chunk(meta, { reasoning_content: piece.text }, null, logprobs);
    case "tool_call":
      return chunk(meta, { tool_calls: [{ index: piece.index, id: piece.id, type: "function", function: { name: piece.name, arguments: "" } }] }, null, logprobs);
    case "tool_args":
      return chunk(meta, { tool_calls: [{ index: piece.index, function: { arguments: piece.text } }] }, null, logprobs);
  }
}

/**
 * A stream's chunks for its pieces, in order: a `logprobs` piece rides with the next chunk, as OpenAI sends each
 * token's logprobs beside its delta; logprobs after the last text (a stop sequence's tokens, say) get a chunk of
 * their own, with an empty delta, before the stop chunk.
 */
export function streamChunks(meta: CompletionMeta) {
  let pending: TokenLogprob[] = [];
  const take = () => {
    const taken = pending;
    pending = [];
    return taken.length === 0 ? undefined : taken;
  };
  return {
    piece(piece: AnswerPiece) {
      if (piece.type === "logprobs") {
        pending.push(...piece.logprobs);
        return [];
      }
      return [pieceChunk(meta, piece, take())];
    },
    /** What is left before the stop chunk. */
    rest() {
      const left = take();
      return left === undefined ? [] : [chunk(meta, {}, null, left)];
    },
  };
}

/** SPEC §3 step 4: usage always (whatever `stream_options` says), the receipt and the verdict fields. */
export function stopChunk(meta: CompletionMeta, receipt: Receipt) {
  const verdict = verdictOf(receipt);
  return {
    ...chunk(meta, {}, receipt.finish_reason),
    usage: reportedUsage(receipt),
    svc_receipt: receipt,
    x_svc_trust: verdict.trust,
    x_svc_model: verdict.model,
    x_svc_provider: verdict.provider,
  };
}

/** The `x-svc-*` response headers of a non-stream answer. */
export function verdictHeaders(verdict: Verdict): Record<string, string> {
  return { "x-svc-trust": verdict.trust, "x-svc-model": verdict.model, "x-svc-provider": verdict.provider };
}
