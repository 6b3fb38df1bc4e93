// An answer as it is assembled from its pieces, the same way on both ends of a session: the agent signs what it
// sent and the gateway checks the receipt against what it relayed, so both must build content, reasoning and
// tool calls alike.
import * as z from "zod";
import { TokenLogprobSchema, type TokenLogprob } from "./logprobs.ts";

/** Call ids are opaque to svc; the bound only keeps a hostile history small. */
export const MAX_CALL_ID_LENGTH = 256;

/** One entry of an assistant message's `tool_calls`, in a history or in an answer. */
export const ToolCallSchema = z.strictObject({
  id: z.string().min(1).max(MAX_CALL_ID_LENGTH),
  type: z.literal("function"),
  function: z.strictObject({ name: z.string(), arguments: z.string() }),
});
export type ToolCall = z.infer<typeof ToolCallSchema>;

/** Calls one answer may make; a random model under a parallel grammar could otherwise go on until max_tokens. */
export const MAX_TOOL_CALLS = 64;

/** Entries one `logprobs` piece carries: an answer held back (a JSON answer) goes out in several, each well within a frame. */
export const MAX_LOGPROBS_PER_PIECE = 256;

/** One piece of an answer: what the engine produces, the agent seals and signs for, and the gateway relays. */
export const AnswerPieceSchema = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("delta"), text: z.string() }),
  /** Text of the `<think>` block, sent apart when the request asked for `reasoning_format: "parsed"`. */
  z.strictObject({ type: z.literal("reasoning"), text: z.string() }),
  /** A tool call begins (OpenAI's first `delta.tool_calls[i]`), then its arguments arrive in pieces. */
  z.strictObject({ type: z.literal("tool_call"), index: z.int().min(0).max(MAX_TOOL_CALLS - 1), id: z.string().min(1).max(MAX_CALL_ID_LENGTH), name: z.string() }),
  /** More of the call's `arguments` string; the pieces join to exactly the final string. */
  z.strictObject({ type: z.literal("tool_args"), index: z.int().min(0).max(MAX_TOOL_CALLS - 1), text: z.string() }),
  /**
   * The log probabilities of the tokens generated since the last piece (issue 43), sent just before the text they
   * made, when the request asked for them: the entries that precede a content `delta` are that content's.
   */
  z.strictObject({ type: z.literal("logprobs"), logprobs: z.array(TokenLogprobSchema).min(1).max(MAX_LOGPROBS_PER_PIECE) }),
]);
export type AnswerPiece = z.infer<typeof AnswerPieceSchema>;

export class AnswerRecord {
  content = "";
  /** Null until reasoning arrives apart (only under `reasoning_format: "parsed"`). */
  reasoning: string | null = null;
  readonly toolCalls: ToolCall[] = [];
  /** Every generated token's entry, in order (`logprobs_sha256`); empty unless the request asked for logprobs. */
  readonly logprobs: TokenLogprob[] = [];
  /** The entries that came before content text (`content_logprobs_sha256`): what Responses shows on `output_text`. */
  readonly contentLogprobs: TokenLogprob[] = [];
  /** Entries not yet followed by text: the next piece with text says whose they are. */
  private pending: TokenLogprob[] = [];

  /** Throws when a call piece is out of order: calls are numbered 0, 1, … and arguments follow their call. */
  add(piece: AnswerPiece): void {
    if (piece.type === "logprobs") {
      this.logprobs.push(...piece.logprobs);
      this.pending.push(...piece.logprobs);
      return;
    }
    // an empty text is not relayed to a stream, so it claims no entries
    if (!("text" in piece) || piece.text !== "") {
      if (piece.type === "delta") this.contentLogprobs.push(...this.pending);
      this.pending = [];
    }
    if (piece.type === "delta") this.content += piece.text;
    else if (piece.type === "reasoning") this.reasoning = (this.reasoning ?? "") + piece.text;
    else if (piece.type === "tool_call") {
      if (piece.index !== this.toolCalls.length) throw new Error(`tool call ${piece.index} begins out of order (expected ${this.toolCalls.length})`);
      this.toolCalls.push({ id: piece.id, type: "function", function: { name: piece.name, arguments: "" } });
    } else {
      const call = this.toolCalls[piece.index];
      if (call === undefined) throw new Error(`arguments for tool call ${piece.index}, which has not begun`);
      call.function.arguments += piece.text;
    }
  }

  /** OpenAI's `message.content`: null for a turn that only calls tools. */
  get messageContent(): string | null {
    return this.content === "" && this.toolCalls.length > 0 ? null : this.content;
  }
}
