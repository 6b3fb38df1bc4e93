// Reads a saved answer of POST /v1/completions (legacy) — a `text_completion` body, or its SSE transcript — strictly,
// in the closed shape the gateway writes (gateway/openai/legacy-completions.ts; RECEIPTS.md "Legacy completions"):
// the receipt covers `choices[0].text`, a stream's texts joined. Portable: part of the verifier in src/receipt/index.ts.
import { createParser } from "eventsource-parser";
import * as z from "zod";
import { FINISH_REASONS, ReportedUsageSchema } from "./receipt.ts";
import { describeError, isObject, parseJson, type Json } from "./saved-json.ts";
import { readShape, StopChunkFields, stopFieldsProblem } from "./saved-shapes.ts";
import type { SavedResponse } from "./types.ts";

const count = z.int().min(0).max(Number.MAX_SAFE_INTEGER);
const Meta = { id: z.string(), created: count, model: z.string(), object: z.literal("text_completion") };
const choice = (finish: z.ZodType<string | null>) => z.tuple([z.strictObject({ text: z.string(), index: z.literal(0), logprobs: z.null(), finish_reason: finish })]);

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
  return { kind: "completion", receipt: svc_receipt, content: choices[0].text, ...plain, usage, finishReason: choices[0].finish_reason, problems };
}

/** A saved legacy stream: text chunks, one last chunk with the finish reason, usage and receipt, then `data: [DONE]`. */
export function fromLegacyStream(text: string): SavedResponse {
  const data: string[] = [];
  createParser({ onEvent: (event) => data.push(event.data) }).feed(`${text}\n\n`);
  const problems: string[] = [];
  let first: Chunk | undefined;
  let stop: Chunk | undefined;
  let content = "";
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
    const problem = read.problem ?? sequenceProblem(chunk!, first!, "svc_receipt" in json);
    if (problem !== undefined) {
      if (!broken) problems.push(`event ${i + 1}: ${problem}`);
      broken = true;
      continue;
    }
    if ("svc_receipt" in json) stop = chunk;
    else content += chunk!.choices[0].text;
  }
  if (stop === undefined) problems.push("no chunk carries svc_receipt");
  else if (!done) problems.push("the transcript ends without data: [DONE]");
  const answer = broken ? {} : { content, ...plain };
  return { kind: "completion-stream", receipt: stop?.svc_receipt, ...answer, usage: stop?.usage, finishReason: stop?.choices[0].finish_reason ?? null, problems };
}

function sequenceProblem(chunk: Chunk, first: Chunk, isStop: boolean): string | undefined {
  if (chunk.id !== first.id || chunk.created !== first.created || chunk.model !== first.model) return "id, created or model differs from the first chunk's";
  const { text, finish_reason } = chunk.choices[0];
  if (!isStop) return finish_reason !== null ? "a finish_reason on a chunk without svc_receipt" : stopFieldsProblem(chunk, false);
  if (finish_reason === null) return "the chunk with svc_receipt has no finish_reason";
  if (chunk.usage === undefined) return "the chunk with svc_receipt has no usage";
  if (text !== "") return "the chunk with svc_receipt carries text";
  return stopFieldsProblem(chunk, true);
}
