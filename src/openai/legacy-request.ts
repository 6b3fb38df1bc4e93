// The body of POST /v1/completions (OpenAI's legacy completions), parsed once at the boundary into the sealed
// request: the prompt as raw text, no chat template, and the few controls the route honours.
import * as z from "zod";
import { resolveModel, type Catalog } from "../catalog.ts";
import { ApiError } from "../errors.ts";
import { MAX_STOP_LENGTH, MAX_STOPS, SamplingSchema } from "../session/sampling.ts";
import { firstIssue } from "../validation.ts";
import { completed, DEFAULT_TEMPERATURE, issueError, MAX_CONTENT_CHARS, parseReceiptNonce, pinOf, Text, type ChatRequest, type Completion } from "./chat-request.ts";
import { CacheFields, cacheOf, type CacheInputs } from "./cache-fields.ts";
import { MAX_LEGACY_LOGPROBS } from "../receipt/logprobs.ts";
import { logprobsFault } from "../session/logprobs.ts";

/** OpenAI's default for this route (chat's is longer). */
export const LEGACY_DEFAULT_MAX_TOKENS = 16;

const StopText = Text.min(1).max(MAX_STOP_LENGTH);

/** Fields this route does not serve: each is refused unless it has the value that asks for nothing. */
const NEUTRAL: Record<string, { harmless: (v: unknown) => boolean; why: string }> = {
  n: { harmless: (v) => v === 1, why: "one choice per request is served; send n: 1 or leave it out" },
  best_of: { harmless: (v) => v === 1, why: "one candidate per request is generated; send best_of: 1 or leave it out" },
  echo: { harmless: (v) => v === false, why: "the prompt is not echoed; send echo: false or leave it out" },
  suffix: { harmless: () => false, why: "insertion (suffix) is not supported; remove it" },
};

const Body = z.object({
  model: z.string().min(1),
  prompt: z.union([Text, z.array(Text).length(1, "one prompt per request is served; send a string or a list of one")]),
  max_tokens: z.int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: SamplingSchema.shape.top_p.nullable(),
  seed: SamplingSchema.shape.seed.nullable(),
  presence_penalty: SamplingSchema.shape.presence_penalty.nullable(),
  frequency_penalty: SamplingSchema.shape.frequency_penalty.nullable(),
  logit_bias: SamplingSchema.shape.logit_bias.nullable(),
  stop: z.union([StopText, z.array(StopText).max(MAX_STOPS)]).nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  /** OpenAI's legacy form: an integer, the alternatives per position (0: the chosen token's alone); null: none. */
  logprobs: z.int().min(0).max(MAX_LEGACY_LOGPROBS).nullish(),
  provider: z.string().nullish(),
  provider_key_id: z.string().nullish(),
  // accepted and ignored: it cannot change the answer
  user: z.string().nullish(),
  // as on chat: a raw prompt is cached under the caller's scope too
  ...CacheFields,
});

/** What chat's parse gives, so the route opens its session as chat does (routing, cache affinity). */
export type LegacyRequest = ChatRequest;

interface LegacyContext extends CacheInputs {
  catalog: Catalog;
  nonce: string;
  receiptNonce?: string | string[] | undefined;
  complete?: Completion | undefined;
}

/** A prompt past the chat limit's 256 KiB, as the 400 that says so; undefined within it. */
export function promptFault(prompt: string): ApiError | undefined {
  if (prompt.length <= MAX_CONTENT_CHARS) return undefined;
  return new ApiError("content_too_large", `prompt holds ${prompt.length} characters; at most ${MAX_CONTENT_CHARS} (256 KiB) are allowed.`, { param: "prompt" });
}

export function parseLegacyRequest(body: unknown, context: LegacyContext): LegacyRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new ApiError("invalid_type", "The request body must be a JSON object.");
  }
  const parsed = Body.safeParse(body, { reportInput: true });
  if (!parsed.success) throw issueError(firstIssue(parsed.error));
  const b = parsed.data;
  for (const [field, rule] of Object.entries(NEUTRAL)) {
    const value = (body as Record<string, unknown>)[field];
    if (value != null && !rule.harmless(value)) throw new ApiError("unsupported_parameter", `${field}: ${rule.why}.`, { param: field });
  }
  const prompt = typeof b.prompt === "string" ? b.prompt : b.prompt[0]!;
  const tooMuch = promptFault(prompt);
  if (tooMuch) throw tooMuch;
  const pin = pinOf(b);
  const clientNonce = parseReceiptNonce(context.receiptNonce);
  const entry = resolveModel(context.catalog, b.model);
  const stop = typeof b.stop === "string" ? [b.stop] : b.stop;
  const cache = cacheOf(b.cache_prompt, context);
  const maxTokens = b.max_tokens ?? LEGACY_DEFAULT_MAX_TOKENS;
  const asked = b.logprobs == null ? {} : { top_logprobs: b.logprobs };
  const fault = logprobsFault({ ...asked, max_tokens: maxTokens });
  if (fault) throw fault;
  const controls = completed(b.seed != null ? { seed: b.seed } : {}, asked, context.complete, maxTokens);
  return {
    body: {
      model: entry.alias,
      messages: [],
      prompt,
      max_tokens: maxTokens,
      temperature: b.temperature ?? DEFAULT_TEMPERATURE,
      ...(b.top_p != null ? { top_p: b.top_p } : {}),
      ...(controls.seed !== undefined ? { seed: controls.seed } : {}),
      ...(b.presence_penalty != null ? { presence_penalty: b.presence_penalty } : {}),
      ...(b.frequency_penalty != null ? { frequency_penalty: b.frequency_penalty } : {}),
      ...(b.logit_bias != null && Object.keys(b.logit_bias).length > 0 ? { logit_bias: b.logit_bias } : {}),
      ...(stop != null && stop.length > 0 ? { stop } : {}),
      ...(controls.top_logprobs !== undefined ? { top_logprobs: controls.top_logprobs } : {}),
      nonce: context.nonce,
      client_nonce: clientNonce,
      ...cache.sealed,
    },
    entry,
    echo: b.model,
    stream: b.stream ?? false,
    pin,
    cacheScope: cache.cacheScope,
    logprobs: asked.top_logprobs !== undefined,
  };
}
