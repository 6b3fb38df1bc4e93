// What travels inside a sealed session (DESIGN §5): the canonical request the gateway seals to the provider,
// and the frames the provider seals back. Only the two ends ever see these in the clear.
import * as z from "zod";
import { ApiError } from "../errors.ts";
import { AnswerPieceSchema } from "../receipt/answer-record.ts";
import { Hex16, Hex32 } from "../receipt/hex.ts";
import { CLIENT_NONCE_PATTERN } from "../receipt/receipt.ts";
import { SamplingSchema } from "./sampling.ts";
import { MAX_CALL_ID_LENGTH, ToolCallSchema, ToolingSchema } from "./tools.ts";
import { embeddingFault, EmbeddingFieldsSchema } from "./embedding-fields.ts";
import { LogprobsFieldSchema, logprobsFault } from "./logprobs.ts";

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

/**
 * The one request shape: the gateway's parser builds it once (src/openai/chat-request.ts), the directory carries
 * it whole, RFC 8785 JSON of it is the exact plaintext sealed to the provider (`src/crypto/seal.ts`), and the agent
 * reads it back with this schema, the rules between fields included.
 */
/** The answer's length when a request sets no `max_tokens` (docs/api.md). */
export const DEFAULT_MAX_TOKENS = 512;

/** The most tokens an answer to `request` may have, before the context's own bound. */
export const answerTokenCap = (request: { max_tokens?: number | undefined }): number => request.max_tokens ?? DEFAULT_MAX_TOKENS;

/** A max_tokens past what the context holds after the prompt: the figures of the 400 that says so. */
export interface NoRoom {
  asked: number;
  prompt: number;
  alias: string;
  room: number;
  context: number;
}

/** That 400's message, as the agent writes it and the gateway rebuilds it from the figures alone. */
export const noRoomMessage = ({ asked, prompt, alias, room, context }: NoRoom): string =>
  `max_tokens is ${asked}, but after the prompt's ${prompt} tokens ${alias} has room for at most ${room} (${context} tokens of prompt and answer together); set max_tokens to ${room} or less.`;

const NO_ROOM = /^max_tokens is (\d{1,12}), but after the prompt's (\d{1,12}) tokens \S{1,64} has room for at most (\d{1,12}) \((\d{1,12}) tokens of prompt and answer together\)/;

/** The figures of a message noRoomMessage wrote, with `alias` in place of whatever name it carries; or undefined. */
export function readNoRoom(message: string, alias: string): NoRoom | undefined {
  const m = NO_ROOM.exec(message);
  return m ? { asked: Number(m[1]), prompt: Number(m[2]), alias, room: Number(m[3]), context: Number(m[4]) } : undefined;
}

export const SessionPlaintextSchema = z
  .strictObject({
    /** The catalog alias the request's `model` resolved to. */
    model: z.string(),
    messages: z.array(ChatMessageSchema),
    /** Only when the caller set it: the agent refuses one the context cannot hold, and without one answers up to
     *  DEFAULT_MAX_TOKENS or what the context holds, whichever is less (OpenAI's default, unlike its explicit cap). */
    max_tokens: z.number().int().positive().optional(),
    temperature: z.number().min(0).max(2),
    /** stop, top_p, seed, penalties, logit_bias…: each only when the caller set it (`src/session/sampling.ts`). */
    ...SamplingSchema.shape,
    /** tools, tool_choice, parallel_tool_calls, reasoning_format, enable_thinking: each only when set (`src/session/tools.ts`). */
    ...ToolingSchema.shape,
    /** Log probabilities, with this many alternatives per position: only when asked for (`src/session/logprobs.ts`). */
    ...LogprobsFieldSchema.shape,
    /** The caller's prompt-cache scope (DESIGN §9): the gateway's HMAC of its key (and `prompt_cache_key`), never the key. */
    cache_scope: Hex32.optional(),
    /** Whose scope it is (an HMAC of the key alone): the provider's cache gives each owner a fair share (issue 41). */
    cache_owner: Hex32.optional(),
    /** Only `false` (llama-server's `cache_prompt`): reuse no cached prefix, and keep nothing of this session. */
    cache_prompt: z.literal(false).optional(),
    /** The caller's `x-svc-receipt-nonce` (null without one), signed into the receipt as `client_nonce`. */
    client_nonce: z.string().regex(CLIENT_NONCE_PATTERN).nullable(),
    /** The gateway's fresh nonce for this request, echoed in the receipt so it is bound to this one request. */
    nonce: Hex16,
    /** An embeddings session (POST /v1/embeddings) instead of a chat turn: its inputs, with no messages. */
    ...EmbeddingFieldsSchema.shape,
    /** A legacy completion (POST /v1/completions): this text is the whole prompt, read without a chat template. */
    prompt: z.string().optional(),
  })
  .superRefine((request, ctx) => {
    const embedding = embeddingFault(request);
    if (embedding) ctx.addIssue({ code: "custom", message: embedding });
    if (request.prompt !== undefined && (request.messages.length > 0 || request.input !== undefined)) {
      ctx.addIssue({ code: "custom", message: "a legacy completion's prompt stands alone: no messages, no input" });
    }
    if (request.input !== undefined && request.top_logprobs !== undefined) ctx.addIssue({ code: "custom", message: "an embeddings session has no logprobs" });
    const fault = crossFieldFault(request) ?? logprobsFault(request);
    // carried whole, so that the agent refuses the request with the gateway's very error (parseSessionPlaintext)
    if (fault) ctx.addIssue({ code: "custom", message: fault.message, params: { fault } });
  });
export type SessionPlaintext = z.infer<typeof SessionPlaintextSchema>;

type CrossFields = Pick<SessionPlaintext, "stop" | "response_format" | "tools" | "tool_choice">;

/** Rules between fields, which no field's own type can say, in the order they are checked. */
const CROSS_FIELD_RULES: { param: string; broken: (request: CrossFields) => boolean; message: string }[] = [
  {
    // a stop text could cut the JSON short while finish_reason says "stop"
    param: "stop",
    broken: (r) => r.response_format !== undefined && r.stop !== undefined,
    message: "stop: stop sequences cannot be combined with a JSON response_format; remove one.",
  },
  {
    // structured output constrains the whole answer, so it cannot sit beside tools the model may call
    param: "response_format",
    broken: (r) => r.response_format !== undefined && r.tools !== undefined && r.tool_choice !== "none",
    message: 'response_format: a JSON response_format cannot be combined with tools the model may call; remove one, or send tool_choice "none".',
  },
];

/**
 * The first cross-field rule the request breaks, as the 400 that both ends give: the gateway's parser before any
 * provider is chosen, and the agent on reading the plaintext (the schema above).
 */
export function crossFieldFault(request: CrossFields): ApiError | undefined {
  const rule = CROSS_FIELD_RULES.find((r) => r.broken(request));
  return rule && new ApiError("unsupported_parameter", rule.message, { param: rule.param });
}

/** The opened plaintext, read by the schema: a broken cross-field rule is its 400, any other fault a ZodError. */
export function parseSessionPlaintext(json: unknown): SessionPlaintext {
  const parsed = SessionPlaintextSchema.safeParse(json, { reportInput: true });
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw issue?.code === "custom" && issue.params?.fault instanceof ApiError ? issue.params.fault : parsed.error;
}

/** Errors a provider may report for a request; anything else it says is a `provider_error`. */
export const PROVIDER_ERROR_CODES = ["provider_error", "context_length_exceeded", "invalid_value", "unsupported_parameter", "schema_too_complex"] as const;

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
