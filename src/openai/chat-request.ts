// The body of POST /v1/chat/completions (SPEC §2.1, §8), parsed once at the boundary: every rule becomes a
// 400 with its own stable code and the offending field's path, and what comes out is already normalised.
import * as z from "zod";
import { resolveModel, type Catalog, type CatalogEntry } from "../catalog.ts";
import { ApiError } from "../errors.ts";
import { SchemaBudget } from "../schema/bounds.ts";
import { CLIENT_NONCE_PATTERN } from "../receipt/receipt.ts";
import { MAX_STOP_LENGTH, MAX_STOPS, RANDOM_SEED, SamplingSchema, type Sampling } from "../session/sampling.ts";
import { crossFieldFault, type ChatMessage, type SessionPlaintext } from "../session/sealed-request.ts";
import { firstIssue, issueMessage, fieldPath, type Issue } from "../validation.ts";
import { MAX_CALL_ID_LENGTH } from "../session/tools.ts";
import { ResponseFormatBody, responseFormatOf } from "./response-format.ts";
import { HistoryCall, ToolFields, toolingOf, type ToolingDefaults } from "./tools-request.ts";
import { refuseUnsupported } from "./unsupported-fields.ts";
import { CacheFields, cacheOf, type CacheInputs } from "./cache-fields.ts";
import { loneSurrogateAt } from "./well-formed.ts";
import { MAX_TOP_LOGPROBS } from "../receipt/logprobs.ts";
import { logprobsFault, logprobTokenCap } from "../session/logprobs.ts";

export const MAX_MESSAGES = 100;
/** SPEC §8: 256 KiB of content characters (Unicode code points) over all messages. */
export const MAX_CONTENT_CHARS = 256 * 1024;
export const DEFAULT_TEMPERATURE = 0.7;
export const MIN_PIN_LENGTH = 8;
export const PIN = new RegExp(`^[0-9a-f]{${MIN_PIN_LENGTH},64}$`);

const TEXT_PART_TYPES = ["text", "input_text"] as const;
// `developer` is what newer OpenAI SDKs send in place of `system`; it renders as a system turn.
const ROLES = ["system", "developer", "user", "assistant", "tool"] as const;

// A JSON escape such as "\ud800" can carry half a surrogate pair, which is no Unicode text: no UTF-8 encodes
// it, so the sealed request's canonical JSON cannot hold it. Refused here, before a provider is chosen.
const LONE_SURROGATE = /\p{Surrogate}/u;
export const Text = z.string().refine((text) => !LONE_SURROGATE.test(text), {
  message: "contains a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape), which is not text; send well-formed Unicode",
});

const StopText = Text.min(1).max(MAX_STOP_LENGTH);
/** The sealed request's own checks, where null also means "not set" (as the OpenAI SDKs send it). */
const sealed = SamplingSchema.shape;

const ContentPart = z.object({ type: z.enum(TEXT_PART_TYPES), text: Text });
const Content = z.union([Text, z.array(ContentPart)]);
const Message = z
  .object({
    role: z.enum(ROLES),
    // required, except beside an assistant's tool_calls (checked below, so that its fault reads as a missing field)
    content: Content.nullish(),
    tool_calls: z.array(HistoryCall).nullish(),
    tool_call_id: z.string().min(1).max(MAX_CALL_ID_LENGTH).nullish(),
    reasoning_content: Text.nullish(),
  })
  .superRefine((m, ctx) => {
    const calls = m.role === "assistant" && m.tool_calls != null && m.tool_calls.length > 0;
    if (m.content == null && !calls) ctx.addIssue({ code: "invalid_type", expected: "string", input: m.content, path: ["content"], message: "required" });
    if (m.role === "tool" && m.tool_call_id == null) ctx.addIssue({ code: "invalid_type", expected: "string", input: undefined, path: ["tool_call_id"], message: "required" });
    if (m.role !== "assistant" && m.tool_calls != null && m.tool_calls.length > 0) {
      ctx.addIssue({ code: "custom", input: m.tool_calls, path: ["tool_calls"], message: "only assistant messages carry tool_calls" });
    }
  });
type Message = z.infer<typeof Message>;

const Body = z.object({
  // SPEC §2.1: the default alias stands in when `model` is absent; an empty string is a fault
  model: z.string().min(1).nullish(),
  messages: z.array(Message).min(1).max(MAX_MESSAGES),
  max_tokens: z.int().positive().nullish(),
  max_completion_tokens: z.int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  stream: z.boolean().nullish(),
  provider: z.string().nullish(),
  provider_key_id: z.string().nullish(),
  // SPEC §2.1: extra keys are ignored
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  stop: z.union([StopText, z.array(StopText).max(MAX_STOPS)]).nullish(),
  top_p: sealed.top_p.nullable(),
  top_k: sealed.top_k.nullable(),
  min_p: sealed.min_p.nullable(),
  seed: sealed.seed.nullable(),
  presence_penalty: sealed.presence_penalty.nullable(),
  frequency_penalty: sealed.frequency_penalty.nullable(),
  repetition_penalty: sealed.repetition_penalty.nullable(),
  // llama-server's name for the same thing
  repeat_penalty: sealed.repetition_penalty.nullable(),
  logit_bias: sealed.logit_bias.nullable(),
  response_format: ResponseFormatBody.nullish(),
  ...ToolFields,
  // checked for type here; values other than the default are refused in unsupported-fields.ts
  n: z.int().min(1).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.int().min(0).max(MAX_TOP_LOGPROBS).nullish(),
  // accepted and ignored: they cannot change the answer
  user: z.string().nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  store: z.boolean().nullish(),
  ...CacheFields,
});
type Body = z.infer<typeof Body>;

/** A chat completion request, parsed: the body sealed to the provider, built once, and what stays at the gateway. */
export interface ChatRequest {
  /** What is sealed to the provider, whole (`src/session/sealed-request.ts`). */
  body: SessionPlaintext;
  /** The catalog entry `body.model` names: routing reads its alias, the receipt check its pins. */
  entry: CatalogEntry;
  /** SPEC §2.2: the response echoes `model` as sent, or the alias it defaulted to. */
  echo: string;
  stream: boolean;
  /** Provider pin: a whole provider id or a unique prefix of at least 8 characters. */
  pin: string | undefined;
  /** The caller's prompt-cache scope, as sealed (undefined under `cache_prompt: false`); routing may keep a scope where its cache is. */
  cacheScope: string | undefined;
  /** Whether the caller asked for logprobs: a complete request (below) seals them always and shows them only then. */
  logprobs: boolean;
}

/**
 * A complete request (issue 43, `svc-gateway serve --audit`): every request seals `top_logprobs` (the caller's, else 0)
 * and a seed (the caller's, else this one, fresh and uniform over 32 bits), so every receipt commits to every token's
 * logprob and an audit, which needs them, looks like any caller's request.
 */
export interface Completion {
  seed: number;
}

/** What a request is read against: the catalog its `model` resolves in, the gateway's defaults, and its nonces. */
export interface ChatContext extends ToolingDefaults, CacheInputs {
  catalog: Catalog;
  /** The gateway's fresh nonce for this request (32 hex digits), sealed and echoed in the receipt. */
  nonce: string;
  /** The `x-svc-receipt-nonce` header as received, if any. */
  receiptNonce?: string | string[] | undefined;
  /** Present when the gateway completes every request (see Completion). */
  complete?: Completion | undefined;
}

export const RECEIPT_NONCE_HEADER = "x-svc-receipt-nonce";

/** The caller's `x-svc-receipt-nonce`, signed into the receipt as `client_nonce`; null when absent. */
export function parseReceiptNonce(header: string | string[] | undefined): string | null {
  if (header === undefined) return null;
  // node joins a repeated header with ", ", which the pattern refuses: one nonce per request
  if (typeof header === "string" && CLIENT_NONCE_PATTERN.test(header)) return header;
  throw new ApiError("invalid_value", `${RECEIPT_NONCE_HEADER} must be 16 to 64 base64url characters (A-Z a-z 0-9 - _).`, {
    param: RECEIPT_NONCE_HEADER,
  });
}

/**
 * Validates a parsed JSON body and its receipt nonce, and resolves its model (SPEC §4.1: an unknown one is a 404
 * before any provider is touched). Throws the ApiError for the first fault: the body's in document order, then the
 * header's, then the model's.
 */
export function parseChatRequest(body: unknown, context: ChatContext): ChatRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new ApiError("invalid_type", "The request body must be a JSON object.");
  }
  const parsed = Body.safeParse(body, { reportInput: true });
  if (!parsed.success) throw issueError(firstIssue(parsed.error));
  const b = parsed.data;
  refuseUnsupported(body as Record<string, unknown> & { messages: object[] });
  const messages = b.messages.map(chatMessage);
  const tooMuch = contentFault(messages);
  if (tooMuch) throw tooMuch;
  const provider = pinOf(b);
  // one budget for all the request's schemas (src/schema/bounds.ts): 128 tools cost no more than one
  const budget = new SchemaBudget();
  const asked = logprobsOf(b);
  const controls = { ...completed(samplingOf(b, budget), asked, context.complete, maxTokensOf(b).max_tokens), ...toolingOf(b, messages, context, budget) };
  const fault = crossFieldFault(controls) ?? logprobsFault({ ...asked, ...maxTokensOf(b) }, b.max_tokens == null ? "max_completion_tokens" : "max_tokens");
  if (fault) throw fault;
  const clientNonce = parseReceiptNonce(context.receiptNonce);
  const { catalog } = context;
  const entry = resolveModel(catalog, b.model ?? catalog.default);
  const cache = cacheOf(b.cache_prompt, context);
  const sealed: SessionPlaintext = {
    model: entry.alias,
    messages,
    ...maxTokensOf(b),
    temperature: b.temperature ?? DEFAULT_TEMPERATURE,
    ...controls,
    nonce: context.nonce,
    client_nonce: clientNonce,
    ...cache.sealed,
  };
  refuseLoneSurrogates(sealed);
  return {
    body: sealed,
    entry,
    echo: b.model ?? entry.alias,
    stream: b.stream ?? false,
    pin: provider,
    cacheScope: cache.cacheScope,
    logprobs: asked.top_logprobs !== undefined,
  };
}

/**
 * The sampling controls and logprobs a request seals: as the caller set them or, when the gateway completes requests,
 * with `top_logprobs` 0 and a fresh seed where the caller set none (a seed of -1, llama-server's "random", is none).
 * A `max_tokens` past what one answer's logprobs may hold (65,536 tokens) keeps the caller's request as it is: a
 * caller who asked for none is not refused for them.
 */
export function completed<T extends { seed?: number }>(sampling: T, asked: { top_logprobs?: number }, complete: Completion | undefined, maxTokens: number | undefined): T & { top_logprobs?: number } {
  if (complete === undefined) return { ...sampling, ...asked };
  const seed = sampling.seed === undefined || sampling.seed === RANDOM_SEED ? complete.seed : sampling.seed;
  const top = asked.top_logprobs ?? (maxTokens !== undefined && maxTokens > logprobTokenCap(0) ? undefined : 0);
  return { ...sampling, seed, ...(top === undefined ? {} : { top_logprobs: top }) };
}

/** SPEC §8's 256 KiB of content over all messages (reasoning sent back included), as the 400 that says so; undefined within it. */
export function contentFault(messages: readonly ChatMessage[]): ApiError | undefined {
  const chars = messages.reduce((sum, m) => sum + codePoints(m.content ?? "") + codePoints(m.role === "assistant" ? (m.reasoning_content ?? "") : ""), 0);
  if (chars <= MAX_CONTENT_CHARS) return undefined;
  return new ApiError("content_too_large", `The messages hold ${chars} characters of content; at most ${MAX_CONTENT_CHARS} (256 KiB) are allowed.`, { param: "messages" });
}

/** The 400 for a lone surrogate anywhere in what is sealed; its path is the request's own (messages map one to one). */
export function refuseLoneSurrogates(sealed: SessionPlaintext): void {
  const at = loneSurrogateAt(sealed);
  if (at === undefined) return;
  const param = fieldPath(at);
  throw new ApiError("invalid_value", `${param}: contains a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape), which is not text; send well-formed Unicode.`, { param });
}

/** `provider`, else its alias `provider_key_id`, lowercased; undefined when neither is set. */
export function pinOf(b: { provider?: string | null; provider_key_id?: string | null }): string | undefined {
  const provider = (b.provider ?? b.provider_key_id ?? undefined)?.toLowerCase();
  // provider ids are 64 hex digits (DESIGN §4): anything else can never match, so it is the caller's fault
  if (provider !== undefined && !PIN.test(provider)) {
    const param = b.provider != null ? "provider" : "provider_key_id";
    throw new ApiError(
      "invalid_value",
      `${param} must be a whole provider id (64 hex digits) or a prefix of at least ${MIN_PIN_LENGTH} of them.`,
      { param },
    );
  }
  return provider;
}

/** One OpenAI message as the model sees it (SPEC §2.1): text parts joined, developer as system, nulls gone. */
function chatMessage(m: Message): ChatMessage {
  // like llama-server, several text parts read as one text with a line between them
  const text = m.content == null ? null : typeof m.content === "string" ? m.content : m.content.map((p) => p.text).join("\n");
  if (m.role === "tool") return { role: "tool", tool_call_id: m.tool_call_id!, content: text! };
  if (m.role !== "assistant") return { role: m.role === "developer" ? "system" : m.role, content: text! };
  const calls = m.tool_calls != null && m.tool_calls.length > 0 ? m.tool_calls : undefined;
  return {
    role: "assistant",
    content: text,
    ...(calls ? { tool_calls: calls.map((c) => ({ id: c.id, type: "function" as const, function: { name: c.function.name, arguments: c.function.arguments } })) } : {}),
    ...(m.reasoning_content != null ? { reasoning_content: m.reasoning_content } : {}),
  };
}

/** Fields sealed exactly as the caller sent them; the others are normalised below. */
const AS_SENT = ["top_p", "top_k", "min_p", "seed", "presence_penalty", "frequency_penalty"] as const satisfies (keyof Sampling)[];

function samplingOf(b: Body, budget: SchemaBudget): Sampling {
  const sampling: Sampling = {};
  for (const field of AS_SENT) {
    const value = b[field];
    if (value != null) sampling[field] = value;
  }
  const stop = typeof b.stop === "string" ? [b.stop] : b.stop;
  if (stop != null && stop.length > 0) sampling.stop = stop;
  if (b.logit_bias != null && Object.keys(b.logit_bias).length > 0) sampling.logit_bias = b.logit_bias;
  const { repetition_penalty: penalty, repeat_penalty: alias } = b;
  if (penalty != null && alias != null && penalty !== alias) {
    throw new ApiError("invalid_value", "repeat_penalty is llama-server's name for repetition_penalty; send one of them.", {
      param: "repeat_penalty",
    });
  }
  const repetition = penalty ?? alias;
  if (repetition != null) sampling.repetition_penalty = repetition;
  const format = responseFormatOf(b.response_format, budget);
  if (format !== undefined) sampling.response_format = format;
  return sampling;
}

function codePoints(text: string): number {
  let pairs = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        pairs++;
        i++;
      }
    }
  }
  return text.length - pairs;
}

const isPartType = (path: readonly PropertyKey[]): boolean =>
  path.length === 5 && path[0] === "messages" && path[2] === "content" && path[4] === "type";

export function issueError(issue: Issue): ApiError {
  const param = fieldPath(issue.path) || null;
  const where = param ?? "body";
  if (issue.input === undefined && (issue.code === "invalid_type" || issue.code === "invalid_value")) {
    return new ApiError("missing_field", `${where} is required.`, { param });
  }
  if (issue.code === "invalid_value" && isPartType(issue.path)) {
    return new ApiError(
      "unsupported_content_part",
      `${where}: content parts of type ${JSON.stringify(issue.input)} are not supported; send "text" or "input_text" parts.`,
      { param },
    );
  }
  if (issue.code === "too_big" && param === "messages") {
    return new ApiError("too_many_messages", `messages: at most ${MAX_MESSAGES} messages are allowed.`, { param });
  }
  if (issue.code === "too_small" && param === "model") {
    return new ApiError("invalid_value", "model must not be empty; name a catalog alias (GET /v1/models).", { param });
  }
  if (issue.code === "invalid_key") {
    return new ApiError("invalid_value", `${where}: a logit_bias key must be a token id, a decimal integer such as "1234".`, { param });
  }
  const code = issue.code === "invalid_type" ? "invalid_type" : "invalid_value";
  return new ApiError(code, `${where}: ${issueMessage(issue)}`, { param });
}

/**
 * OpenAI's `logprobs: true` with `top_logprobs` alternatives (0 when unset), sealed as `top_logprobs`; alternatives
 * without `logprobs: true` would be silently dropped, so they are a 400 (as OpenAI answers).
 */
function logprobsOf(b: { logprobs?: boolean | null; top_logprobs?: number | null }): { top_logprobs?: number } {
  if (b.logprobs === true) return { top_logprobs: b.top_logprobs ?? 0 };
  if (b.top_logprobs != null && b.top_logprobs > 0) {
    throw new ApiError("invalid_value", "top_logprobs: alternatives come only with logprobs: true; send both, or leave top_logprobs out.", { param: "top_logprobs" });
  }
  return {};
}

/** `max_tokens`, else `max_completion_tokens`, sealed only when the caller set one (src/session/sealed-request.ts). */
function maxTokensOf(b: { max_tokens?: number | null; max_completion_tokens?: number | null }): { max_tokens?: number } {
  const asked = b.max_tokens ?? b.max_completion_tokens;
  return asked == null ? {} : { max_tokens: asked };
}
