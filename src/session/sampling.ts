// The sampling and length controls a caller may set beyond temperature, as they travel in the sealed request:
// names, types and ranges in one place, so the gateway's parser and the agent's check of the plaintext agree.
import * as z from "zod";

/** OpenAI's limit on stop sequences. */
export const MAX_STOPS = 4;
/** Text that could still become a stop is held back while streaming, so a stop's length bounds that delay. */
export const MAX_STOP_LENGTH = 256;
/** Each biased token costs a little on every sampling step; no real use needs more. */
export const MAX_LOGIT_BIASES = 300;
/** A token id written as a JSON object key: a decimal integer, without sign or leading zeros. */
export const TOKEN_ID_KEY = /^(?:0|[1-9][0-9]{0,9})$/;
/** llama-server's `seed: -1`: pick a random seed, as if none were given. */
export const RANDOM_SEED = -1;

const Penalty = z.number().min(-2).max(2);

/** OpenAI's rule for `response_format.json_schema.name`. */
export const SCHEMA_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Structured output: the content is generated under a llama.cpp grammar, so it parses as JSON (an object for
 * `json_object`) and, when `finish_reason` is `stop`, matches the schema as far as `src/schema/prepare.ts` says the
 * grammar enforces it. Sealed as the caller sent it (less `description`), so `request_sha256` covers the schema.
 */
export const ResponseFormatSchema = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("json_object") }),
  z.strictObject({
    type: z.literal("json_schema"),
    json_schema: z.strictObject({
      name: z.string().regex(SCHEMA_NAME),
      /** Absent: any JSON object, as `json_object`. */
      schema: z.record(z.string(), z.unknown()).optional(),
      strict: z.boolean().optional(),
    }),
  }),
]);
export type ResponseFormat = z.infer<typeof ResponseFormatSchema>;

/**
 * Each field is present only when the caller set it (absent means the engine's OpenAI default), so a request
 * that sets none seals the same bytes as before these existed. Field names are OpenAI's (llama-server's
 * `top_k`, `min_p`; OpenRouter's `repetition_penalty`).
 */
export const SamplingSchema = z.strictObject({
  /** Generation ends before the first of these texts; the text is not returned. */
  stop: z.array(z.string().min(1).max(MAX_STOP_LENGTH)).min(1).max(MAX_STOPS).optional(),
  top_p: z.number().min(0).max(1).optional(),
  /** 0 keeps every token, as llama-server. */
  top_k: z.int().min(0).optional(),
  min_p: z.number().min(0).max(1).optional(),
  /** Same seed, same request, same provider and model file: same text. */
  seed: z.int().optional(),
  presence_penalty: Penalty.optional(),
  frequency_penalty: Penalty.optional(),
  /** Divides a repeated token's logit (multiplies a negative one); 1 is off. */
  repetition_penalty: z.number().gt(0).max(2).optional(),
  /** Token id (decimal string) → value added to its logit. */
  logit_bias: z
    .record(z.string().regex(TOKEN_ID_KEY), z.number().min(-100).max(100))
    .refine((bias) => Object.keys(bias).length <= MAX_LOGIT_BIASES, { message: `at most ${MAX_LOGIT_BIASES} tokens may be biased` })
    .optional(),
  /** Absent for plain text (`{"type": "text"}` is never sealed). */
  response_format: ResponseFormatSchema.optional(),
});
export type Sampling = z.infer<typeof SamplingSchema>;

export const SAMPLING_FIELDS = Object.keys(SamplingSchema.shape) as (keyof Sampling)[];
