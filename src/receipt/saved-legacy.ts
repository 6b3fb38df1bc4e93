// Reads a saved answer of POST /v1/completions (legacy) — a `text_completion` body, or its SSE transcript — strictly,
// in the closed shape the gateway writes (gateway/openai/legacy-completions.ts; RECEIPTS.md "Legacy completions"):
// the receipt covers `choices[0].text`, a stream's texts joined. Portable: part of the verifier in src/receipt/index.ts.
import { createParser } from "eventsource-parser";
import * as z from "zod";
import { FINISH_REASONS, ReportedUsageSchema } from "./receipt.ts";
import { canonicalJson } from "./canonical-json.ts";
import { legacyLogprobs, legacyOffsetAfter, TokenLogprobSchema, type TokenLogprob } from "./logprobs.ts";
import { describeError, isObject, parseJson, type Json } from "./saved-json.ts";
import { readShape, StopChunkFields, stopFieldsProblem } from "./saved-shapes.ts";
import type { SavedResponse } from "./types.ts";

const count = z.int().min(0).max(Number.MAX_SAFE_INTEGER);
const Meta = { id: z.string(), created: count, model: z.string(), object: z.literal("text_completion") };
/**
 * OpenAI's legacy logprobs, and llama-server's `content` list of the entries themselves, which the receipt covers: the
 * four arrays must be what `content` gives (src/receipt/logprobs.ts), so they are read only to be compared.
 */
const LegacyLogprobsSchema = z.strictObject({
  tokens: z.array(z.string()),
  token_logprobs: z.array(z.number()),
  top_logprobs: z.array(z.record(z.string(), z.number())),
  text_offset: z.array(count),
  content: z.array(TokenLogprobSchema),
});
type LegacyLogprobs = z.infer<typeof LegacyLogprobsSchema>;
const choice = (finish: z.ZodType<string | null>) => z.tuple([z.strictObject({ text: z.string(), index: z.literal(0), logprobs: LegacyLogprobsSchema.nullable(), finish_reason: finish })]);

/**
 * Whether the legacy arrays, as the file has them (not zod's copy, which would read a token spelled `__proto__` as
 * a prototype), are the ones the entries give, counted from `offset`.
 */
const derivedProblem = (raw: Json, logprobs: LegacyLogprobs, offset: number): string | undefined =>
  canonicalJson(firstChoiceOf(raw).logprobs) === canonicalJson(legacyLogprobs(logprobs.content, offset)) ? undefined : "logprobs: tokens, token_logprobs, top_logprobs or text_offset are not what its content gives";
const firstChoiceOf = (raw: Json): Json => (raw.choices as Json[])[0]!;

const BodySchema = z.strictObject({ ...Meta, choices: choice(z.enum(FINISH_REASONS)), usage: ReportedUsageSchema, svc_receipt: z.unknown().optional() });

const ChunkSchema = z.strictObject({
  ...Meta,
  choices: choice(z.enum(FINISH_REASONS).nullable()),
  // the last event's own fields, as chat's stop chunk
  ...StopChunkFields,
});
type Chunk = z.infer<typeof ChunkSchema>;

/** Whether the JSON is a legacy completion (rather than a chat completion or a receipt). */
export const isLegacyBody = (json: Json): boolean => json.object === "text_completion";

/** Whether an SSE transcript is a legacy completions stream: its first event is a `text_completion`. */
export const isLegacyStream = (text: string): boolean => /^data: *\{[^\n]*"object":"text_completion"/m.test(text);

/** A legacy answer is content only: the receipt's calls and reasoning hashes must be null. */
const plain = { toolCalls: [], reasoning: null };

export function fromLegacyBody(json: Json): SavedResponse {
  const problems = "svc_receipt" in json ? [] : ["the response carries no svc_receipt"];
  const read = readShape(BodySchema, json);
  if (read.problem !== undefined) return { kind: "completion", receipt: json.svc_receipt, problems: [...problems, `the response is not in the gateway's shape: ${read.problem}`] };
  const { choices, usage, svc_receipt } = read.data;
  const { logprobs } = choices[0];
  const derived = logprobs === null ? undefined : derivedProblem(json, logprobs, 0);
  if (derived !== undefined) problems.push(derived);
  return { kind: "completion", receipt: svc_receipt, content: choices[0].text, ...plain, logprobs: logprobs?.content, usage, finishReason: choices[0].finish_reason, problems };
}

/** A saved legacy stream: text chunks, one last chunk with the finish reason, usage and receipt, then `data: [DONE]`. */
export function fromLegacyStream(text: string): SavedResponse {
  const data: string[] = [];
  createParser({ onEvent: (event) => data.push(event.data) }).feed(`${text}\n\n`);
  const problems: string[] = [];
  let first: Chunk | undefined;
  let stop: Chunk | undefined;
  let content = "";
  const logprobs: TokenLogprob[] = [];
  // whether any event showed logprobs: none means not shown, not an answer without them
  let shownAny = false;
  let broken = false;
  let done = false;
  for (const [i, raw] of data.entries()) {
    if (raw === "[DONE]") {
      if (done || i !== data.length - 1) problems.push("events follow data: [DONE]");
      done = true;
      continue;
    }
    const json = parseJson(raw, `event ${i + 1}`, `event ${i + 1} is not JSON`);
    if (!isObject(json)) throw new Error(`event ${i + 1} is not a JSON object`);
    if ("error" in json) {
      problems.push(`the stream failed (${describeError(json.error)}); a failed stream has no receipt`);
      continue;
    }
    if (stop !== undefined) problems.push(`event ${i + 1}: a chunk follows the one with svc_receipt`);
    const read = readShape(ChunkSchema, json);
    const chunk = read.data;
    first ??= chunk;
    const shown = chunk?.choices[0].logprobs ?? null;
    const problem = read.problem ?? sequenceProblem(chunk!, first!, "svc_receipt" in json) ?? (shown === null ? undefined : derivedProblem(json, shown, legacyOffsetAfter(logprobs)));
    if (problem !== undefined) {
      if (!broken) problems.push(`event ${i + 1}: ${problem}`);
      broken = true;
      continue;
    }
    if ("svc_receipt" in json) stop = chunk;
    else content += chunk!.choices[0].text;
    if (shown !== null) {
      shownAny = true;
      logprobs.push(...shown.content);
    }
  }
  if (stop === undefined) problems.push("no chunk carries svc_receipt");
  else if (!done) problems.push("the transcript ends without data: [DONE]");
  const answer = broken ? {} : { content, ...plain, logprobs: shownAny ? logprobs : undefined };
  return { kind: "completion-stream", receipt: stop?.svc_receipt, ...answer, usage: stop?.usage, finishReason: stop?.choices[0].finish_reason ?? null, problems };
}

function sequenceProblem(chunk: Chunk, first: Chunk, isStop: boolean): string | undefined {
  if (chunk.id !== first.id || chunk.created !== first.created || chunk.model !== first.model) return "id, created or model differs from the first chunk's";
  const { text, finish_reason } = chunk.choices[0];
  if (!isStop) return finish_reason !== null ? "a finish_reason on a chunk without svc_receipt" : stopFieldsProblem(chunk, false);
  if (finish_reason === null) return "the chunk with svc_receipt has no finish_reason";
  if (chunk.usage === undefined) return "the chunk with svc_receipt has no usage";
  if (text !== "" || chunk.choices[0].logprobs !== null) return "the chunk with svc_receipt carries text or logprobs";
  return stopFieldsProblem(chunk, true);
}
