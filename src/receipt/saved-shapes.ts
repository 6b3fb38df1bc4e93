// The closed shapes of what a gateway sends (src/openai/shapes.ts): a completion body and a stream chunk, plus
// the fields listed in outside-fields.ts. A saved answer is read only through these, so a field the verifier
// did not check cannot pass unseen. Portable: part of the verifier in src/receipt/index.ts.
import * as z from "zod";
import { MAX_CALL_ID_LENGTH, MAX_TOOL_CALLS, ToolCallSchema } from "./answer-record.ts";
import { FINISH_REASONS, ReportedUsageSchema } from "./receipt.ts";
import { TokenLogprobSchema } from "./logprobs.ts";
import type { ReportedUsage } from "./types.ts";

const count = z.int().min(0).max(Number.MAX_SAFE_INTEGER);
/** Not covered by the receipt (outside-fields.ts): only their types are checked. */
const Meta = { id: z.string(), created: count, model: z.string() };
const CallIndex = z.int().min(0).max(MAX_TOOL_CALLS - 1);

/** `choices[0].message.tool_calls[i]`; the openai SDK's `parse()` adds `parsed_arguments`. */
const BodyToolCallSchema = ToolCallSchema.extend({
  function: z.strictObject({ name: z.string(), arguments: z.string(), parsed_arguments: z.unknown().optional() }),
});

/** What an SDK writes for something svc never produces: `null`, or nothing (RECEIPTS.md "Fields outside the receipt"). */
const none = z.null().optional();

/** `choices[0].logprobs` when the request asked for them: every token's entry (a v4 receipt covers them); `refusal` is always null. */
export const ChoiceLogprobsSchema = z.strictObject({ content: z.array(TokenLogprobSchema), refusal: z.null() });

/** A body's `usage`; openai-python's `model_dump_json()` adds the other counts of its usage models, each null. */
const BodyUsageSchema = z.strictObject({
  prompt_tokens: count,
  completion_tokens: count,
  total_tokens: count,
  completion_tokens_details: z.strictObject({ reasoning_tokens: count, accepted_prediction_tokens: none, audio_tokens: none, rejected_prediction_tokens: none, text_tokens: none }).nullable().optional(),
  prompt_tokens_details: z.strictObject({ cached_tokens: count, audio_tokens: none, cache_write_tokens: none, image_tokens: none, text_tokens: none }).nullable().optional(),
});

/** The usage a body reports, without what an SDK added: its null counts, and a null in place of details there are none of. */
export function reportedUsageOf(usage: z.infer<typeof BodyUsageSchema>): ReportedUsage {
  const { prompt_tokens, completion_tokens, total_tokens, completion_tokens_details: done, prompt_tokens_details: prompt } = usage;
  return {
    prompt_tokens,
    completion_tokens,
    total_tokens,
    ...(done == null ? {} : { completion_tokens_details: { reasoning_tokens: done.reasoning_tokens } }),
    ...(prompt == null ? {} : { prompt_tokens_details: { cached_tokens: prompt.cached_tokens } }),
  };
}

/** The stop chunk's own fields (SPEC §3 step 4), on chat's stream and the legacy one. */
export const StopChunkFields = {
  usage: ReportedUsageSchema.optional(),
  svc_receipt: z.unknown().optional(),
  x_svc_trust: z.string().optional(),
  x_svc_model: z.string().optional(),
  x_svc_provider: z.string().optional(),
  x_svc_timing: z.record(z.string(), z.number().nonnegative()).optional(),
};

/**
 * A completion body as the gateway writes it, and as SDKs hand it back: openai-node's `parse()` adds `parsed` and
 * `parsed_arguments`, its `stream().finalChatCompletion()` also `refusal` and `logprobs` (null) and keeps the stop
 * chunk's `x_svc_*`, openai-python's `model_dump_json()` writes every field of its models, null where svc has nothing.
 */
export const BodySchema = z.strictObject({
  ...Meta,
  object: z.literal("chat.completion"),
  // svc answers with one choice: any other count or index is not what was signed
  choices: z.tuple([
    z.strictObject({
      index: z.literal(0),
      message: z.strictObject({
        role: z.literal("assistant"),
        content: z.string().nullable(),
        reasoning_content: z.string().optional(),
        // null (openai-python) only for an answer without calls: the calls' hash holds it to that
        tool_calls: z.array(BodyToolCallSchema).min(1).max(MAX_TOOL_CALLS).nullable().optional(),
        /** The openai SDK's `parse()`: the JSON value of `content`, or null. */
        parsed: z.unknown().optional(),
        refusal: none,
        annotations: none,
        audio: none,
        function_call: none,
      }),
      finish_reason: z.enum(FINISH_REASONS),
      // absent or null (an SDK's) when none were asked for
      logprobs: ChoiceLogprobsSchema.nullable().optional(),
    }),
  ]),
  ...StopChunkFields,
  usage: BodyUsageSchema,
  metadata: none,
  moderation: none,
  service_tier: none,
  system_fingerprint: none,
});
export type Body = z.infer<typeof BodySchema>;

/** A call's first delta names it; the rest carry no id and continue the call at their index. */
const CallStartSchema = z.strictObject({
  index: CallIndex,
  id: z.string().min(1).max(MAX_CALL_ID_LENGTH),
  type: z.literal("function"),
  function: z.strictObject({ name: z.string(), arguments: z.string() }),
});
const CallMoreSchema = z.strictObject({
  index: CallIndex,
  function: z.strictObject({ name: z.string().optional(), arguments: z.string() }),
});
export type CallDelta = z.infer<typeof CallStartSchema> | z.infer<typeof CallMoreSchema>;

export const ChunkSchema = z.strictObject({
  ...Meta,
  object: z.literal("chat.completion.chunk"),
  choices: z.tuple([
    z.strictObject({
      index: z.literal(0),
      delta: z.strictObject({
        role: z.literal("assistant").optional(),
        content: z.string().optional(),
        reasoning_content: z.string().optional(),
        tool_calls: z.array(z.union([CallStartSchema, CallMoreSchema])).min(1).max(MAX_TOOL_CALLS).optional(),
      }),
      /** The logprobs of the tokens before this chunk's delta (or, with an empty delta, after the last text). */
      logprobs: ChoiceLogprobsSchema.extend({ content: ChoiceLogprobsSchema.shape.content.min(1) }).optional(),
      finish_reason: z.enum(FINISH_REASONS).nullable(),
    }),
  ]),
  ...StopChunkFields,
});
export type Chunk = z.infer<typeof ChunkSchema>;

const STOP_FIELDS = ["usage", "x_svc_trust", "x_svc_model", "x_svc_provider", "x_svc_timing"] as const;
const COVERED = [["x_svc_trust", "trust_level"], ["x_svc_model", "model_id"], ["x_svc_provider", "provider_id"]] as const;

/** A stream's last chunk alone carries usage and the verdict fields, and those must be its receipt's (chat and legacy). */
export function stopFieldsProblem(chunk: { [K in (typeof STOP_FIELDS)[number] | "svc_receipt"]?: unknown }, isStop: boolean): string | undefined {
  if (!isStop) {
    const present = STOP_FIELDS.filter((k) => k in chunk);
    return present.length > 0 ? `${present.join(", ")} on a chunk without svc_receipt` : undefined;
  }
  const receipt = typeof chunk.svc_receipt === "object" && chunk.svc_receipt !== null ? (chunk.svc_receipt as Record<string, unknown>) : {};
  for (const [field, covered] of COVERED) {
    if (chunk[field] !== receipt[covered]) return `${field} is ${String(chunk[field])}, not the receipt's ${covered}`;
  }
  return undefined;
}

/** The value as the shape types it, or the first thing wrong with it, as `choices[0].index: …`. */
export function readShape<T>(schema: z.ZodType<T>, value: unknown): { data: T; problem?: undefined } | { data?: undefined; problem: string } {
  const parsed = schema.safeParse(value);
  if (parsed.success) return { data: parsed.data };
  const issue = parsed.error.issues[0]!;
  const where = issue.path.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`)).join("").replace(/^\./, "");
  return { problem: `${where === "" ? "the object" : where}: ${issue.message}` };
}
