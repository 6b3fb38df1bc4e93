// What travels inside a sealed session (DESIGN §5): the canonical request the gateway seals to the provider,
// and the frames the provider seals back. Only the two ends ever see these in the clear.
import { z } from "zod";
import { AnswerPieceSchema } from "../receipt/answer-record.ts";
import { Hex16 } from "../receipt/hex.ts";
import { CLIENT_NONCE_PATTERN } from "../receipt/receipt.ts";
import { SamplingSchema } from "./sampling.ts";
import { MAX_CALL_ID_LENGTH, ToolCallSchema, ToolingSchema } from "./tools.ts";

/**
 * One chat turn as the model sees it: the gateway normalises OpenAI messages into this once, at parsing. A plain
 * turn is `{role, content}` as it always was; tool calls, tool results and kept reasoning add their own fields.
 */
export const ChatMessageSchema = z.union([
  z.strictObject({ role: z.enum(["system", "user"]), content: z.string() }),
  z.strictObject({
    role: z.literal("assistant"),
    /** Null only beside tool_calls, as OpenAI sends a turn that only calls tools. */
    content: z.string().nullable(),
    tool_calls: z.array(ToolCallSchema).min(1).optional(),
    /** An earlier answer's reasoning, sent back apart (DeepSeek, OpenRouter); Qwen3's template decides what it keeps. */
    reasoning_content: z.string().optional(),
  }).refine((m) => m.content !== null || m.tool_calls !== undefined, { message: "content may be null only beside tool_calls" }),
  z.strictObject({ role: z.literal("tool"), tool_call_id: z.string().min(1).max(MAX_CALL_ID_LENGTH), content: z.string() }),
]);
export type ChatMessage = z.infer<typeof ChatMessageSchema>;

/** RFC 8785 JSON of this object is the exact plaintext the gateway seals to the provider (`src/crypto/seal.ts`). */
export const SessionPlaintextSchema = z.strictObject({
  model: z.string(),
  messages: z.array(ChatMessageSchema),
  max_tokens: z.number().int().positive(),
  temperature: z.number().min(0).max(2),
  /** stop, top_p, seed, penalties, logit_bias…: each only when the caller set it (`src/session/sampling.ts`). */
  ...SamplingSchema.shape,
  /** tools, tool_choice, parallel_tool_calls, reasoning_format, enable_thinking: each only when set (`src/session/tools.ts`). */
  ...ToolingSchema.shape,
  /** The gateway's fresh nonce, echoed in the receipt so it is bound to this one request. */
  nonce: Hex16,
  /** The caller's `x-svc-receipt-nonce` (null without one), signed into the receipt as `client_nonce`. */
  client_nonce: z.string().regex(CLIENT_NONCE_PATTERN).nullable(),
});
export type SessionPlaintext = z.infer<typeof SessionPlaintextSchema>;

/** Errors a provider may report for a request; anything else it says is a `provider_error`. */
export const PROVIDER_ERROR_CODES = ["provider_error", "context_length_exceeded", "invalid_value"] as const;

export const SessionFrameSchema = z.discriminatedUnion("type", [
  ...AnswerPieceSchema.options,
  /** Pieces produced together, in one frame (a stream's burst, or a long non-stream answer in parts). */
  z.strictObject({ type: z.literal("pieces"), pieces: z.array(AnswerPieceSchema).min(1) }),
  // the receipt carries finish_reason and usage; its shape is the verifier's to judge (a bad one is
  // `receipt_invalid`, not a broken frame)
  z.strictObject({
    type: z.literal("done"),
    receipt: z.unknown(),
    /** The agent's time from taking the session to its first answer event, for Server-Timing's `provider`. */
    first_token_ms: z.number().nonnegative().optional(),
    /** A non-stream session's answer (or its rest), in the same frame as its receipt. */
    pieces: z.array(AnswerPieceSchema).min(1).optional(),
  }),
  z.strictObject({ type: z.literal("error"), code: z.string(), message: z.string().max(2000), param: z.string().nullable() }),
]);
export type SessionFrame = z.infer<typeof SessionFrameSchema>;
