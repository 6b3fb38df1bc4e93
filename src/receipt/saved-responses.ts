// Reads a saved answer of POST /v1/responses — a response object, or its SSE event stream — strictly, in the
// closed shape the gateway writes (RECEIPTS.md "Responses"), and reads back out of its output items the answer the
// receipt covers. A stream's deltas must build exactly the items of its final response. Portable: part of the
// verifier in src/receipt/index.ts.
import { createParser } from "eventsource-parser";
import * as z from "zod";
import { canonicalJson } from "./canonical-json.ts";
import { answerOfItems, FunctionCallItemSchema, MessageItemSchema, OutputTextSchema, ReasoningItemSchema, ResponsesUsageSchema, type OutputItem } from "./response-items.ts";
import { describeError, isJsonOf, isObject, parseJson, type Json } from "./saved-json.ts";
import { readShape } from "./saved-shapes.ts";
import type { SavedResponse } from "./types.ts";
import { RECEIPT_VERSION_CACHE, RECEIPT_VERSION_LOGPROBS } from "./receipt.ts";

const count = z.int().min(0).max(Number.MAX_SAFE_INTEGER);

/** The items as the gateway writes them, and as openai-node's `responses.parse()` and `stream().finalResponse()` hand them back. */
const SavedItemSchema = z.discriminatedUnion("type", [
  ReasoningItemSchema,
  MessageItemSchema.extend({ content: z.tuple([OutputTextSchema.extend({ parsed: z.unknown().optional() })]) }),
  FunctionCallItemSchema.extend({ parsed_arguments: z.unknown().optional() }),
]);
type SavedItem = z.infer<typeof SavedItemSchema>;

const ResponseBodySchema = z.strictObject({
  id: z.string(),
  object: z.literal("response"),
  created_at: count,
  status: z.enum(["completed", "incomplete"]),
  error: z.null(),
  incomplete_details: z.strictObject({ reason: z.literal("max_output_tokens") }).nullable(),
  // the request's fields, echoed: outside the receipt, so only their types are checked
  instructions: z.string().nullable(),
  max_output_tokens: count.nullable(),
  model: z.string(),
  output: z.array(SavedItemSchema).min(1),
  parallel_tool_calls: z.boolean(),
  previous_response_id: z.null(),
  reasoning: z.strictObject({ effort: z.string().nullable(), summary: z.null() }),
  store: z.literal(false),
  temperature: z.number(),
  text: z.strictObject({ format: z.looseObject({ type: z.string() }) }),
  tool_choice: z.unknown(),
  tools: z.array(z.unknown()),
  top_p: z.number().nullable(),
  truncation: z.literal("disabled"),
  usage: ResponsesUsageSchema,
  user: z.string().nullable(),
  metadata: z.record(z.string(), z.string()),
  svc_receipt: z.unknown().optional(),
  /** The openai SDK's convenience: every output_text joined. */
  output_text: z.string().optional(),
  /** openai-node's `responses.parse()` and `stream().finalResponse()`: the first `parsed` of a message that is not null. */
  output_parsed: z.unknown().optional(),
});
type ResponseBody = z.infer<typeof ResponseBodySchema>;

/** Whether the JSON is a Responses response object (rather than a chat completion or a receipt). */
export const isResponsesBody = (json: Json): boolean => json.object === "response";

/** A saved response object: its receipt, and the answer its items say was returned. */
export function fromResponsesBody(json: Json, kind: "responses" | "responses-stream" = "responses"): SavedResponse {
  const problems = "svc_receipt" in json ? [] : ["the response carries no svc_receipt"];
  const read = readShape(ResponseBodySchema, json);
  if (read.problem !== undefined) return { kind, receipt: json.svc_receipt, problems: [...problems, `the response is not in the gateway's shape: ${read.problem}`] };
  const body = read.data;
  const answer = answerOfItems(body.output as OutputItem[], body.status);
  if ("problem" in answer) return { kind, receipt: body.svc_receipt, problems: [...problems, `the output items are not a layout the gateway makes: ${answer.problem}`] };
  if ((body.incomplete_details !== null) !== (body.status === "incomplete")) problems.push("incomplete_details does not match status");
  if (body.output_text !== undefined && body.output_text !== answer.content) problems.push("output_text is not every output_text of the message items joined");
  problems.push(...parsedProblems(body));
  const { usage } = body;
  const version = isObject(body.svc_receipt) ? body.svc_receipt.version : undefined;
  const v3 = version === RECEIPT_VERSION_CACHE || version === RECEIPT_VERSION_LOGPROBS;
  if (!v3 && usage.input_tokens_details.cached_tokens !== 0) problems.push("usage.input_tokens_details.cached_tokens is not covered by a v2 receipt and must be 0");
  // the receipt's usage carries the reasoning count only when the provider reported one (always, under parsed reasoning)
  const receiptUsage = isObject(body.svc_receipt) && isObject(body.svc_receipt.usage) ? body.svc_receipt.usage : {};
  const details = "completion_tokens_details" in receiptUsage ? { completion_tokens_details: { reasoning_tokens: usage.output_tokens_details.reasoning_tokens } } : {};
  if (!("completion_tokens_details" in receiptUsage) && usage.output_tokens_details.reasoning_tokens !== 0) problems.push("usage.output_tokens_details.reasoning_tokens is not the receipt's");
  return {
    kind,
    receipt: body.svc_receipt,
    content: answer.content,
    contentLogprobs: answer.contentLogprobs,
    toolCalls: answer.toolCalls,
    reasoning: answer.reasoning,
    usage: {
      prompt_tokens: usage.input_tokens,
      completion_tokens: usage.output_tokens,
      total_tokens: usage.total_tokens,
      ...details,
      // a v3 receipt signs the cache count; under v2 the count must be 0, as nothing vouches for another
      ...(v3 ? { prompt_tokens_details: { cached_tokens: usage.input_tokens_details.cached_tokens } } : {}),
    },
    finishReason: answer.finishReason,
    problems,
  };
}

/**
 * openai-node's parsed fields (RECEIPTS.md "Fields outside the receipt"): each absent, null, or the JSON value of the
 * text it was parsed from, a message's only under a `json_schema` text format; `output_parsed` the first that is not null.
 */
function parsedProblems(body: ResponseBody): string[] {
  const problems: string[] = [];
  let first: unknown = null;
  for (const [i, item] of (body.output as SavedItem[]).entries()) {
    if (item.type === "function_call") {
      const args = item.parsed_arguments;
      if (args !== undefined && args !== null && !isJsonOf(args, item.arguments)) problems.push(`output[${i}].parsed_arguments is not the JSON value of its arguments`);
    } else if (item.type === "message") {
      const { parsed, text } = item.content[0];
      if (parsed === undefined || parsed === null) continue;
      if (body.text.format.type !== "json_schema") problems.push(`output[${i}].content[0].parsed is not null, but text.format is not json_schema`);
      else if (!isJsonOf(parsed, text)) problems.push(`output[${i}].content[0].parsed is not the JSON value of its text`);
      if (first === null) first = parsed;
    }
  }
  if (body.output_parsed !== undefined && canonicalJson(body.output_parsed) !== canonicalJson(first)) problems.push("output_parsed is not the first parsed of the message items");
  return problems;
}

/** Whether an SSE transcript is a Responses event stream (its events are typed `response.…`). */
export const isResponsesStream = (text: string): boolean => /^event: *response\./m.test(text) || /^data: *\{"type":"response\./m.test(text);

/** A saved Responses event stream: the final response, held to the items its deltas built. */
export function fromResponsesStream(text: string): SavedResponse {
  const events: { name: string | undefined; data: string }[] = [];
  const parser = createParser({ onEvent: (event) => events.push({ name: event.event, data: event.data }) });
  parser.feed(`${text}\n\n`);
  const problems: string[] = [];
  const rebuild = new ItemsRebuild();
  let final: Json | undefined;
  for (const [i, { name, data }] of events.entries()) {
    const event = parseJson(data, `event ${i + 1}`, `event ${i + 1} is not JSON`);
    if (!isObject(event)) throw new Error(`event ${i + 1} is not a JSON object`);
    if (event.type === "error" || event.type === "response.failed") {
      problems.push(`the stream failed (${describeError(event.type === "error" ? event : isObject(event.response) ? event.response.error : undefined)}); a failed stream has no receipt`);
      return { kind: "responses-stream", receipt: undefined, problems };
    }
    const problem =
      (name !== undefined && name !== event.type ? `the event line says ${name}, the data ${String(event.type)}` : undefined) ??
      (event.sequence_number !== i ? `sequence_number is ${String(event.sequence_number)}, expected ${i}` : undefined) ??
      (final !== undefined ? "an event follows the final response" : undefined) ??
      rebuild.add(event, i);
    if (problem !== undefined) {
      problems.push(`event ${i + 1}: ${problem}`);
      return { kind: "responses-stream", receipt: undefined, problems };
    }
    if (event.type === "response.completed" || event.type === "response.incomplete") final = event.response as Json;
  }
  if (final === undefined) return { kind: "responses-stream", receipt: undefined, problems: ["the stream ends without response.completed or response.incomplete"] };
  const saved = fromResponsesBody(final, "responses-stream");
  if (canonicalJson(final.output) !== canonicalJson(rebuild.items)) saved.problems.push("the final response's output is not the items the deltas built");
  if (rebuild.opening.some((begun) => canonicalJson(begun) !== canonicalJson(asBegun(final)))) saved.problems.push("response.created or response.in_progress is not the final response before its answer");
  return saved;
}

const OPENING = ["response.created", "response.in_progress"];

const WHERE = ["item_id", "output_index", "content_index"];
/** Each event's fields besides `type` and `sequence_number`: the events are closed like the rest. */
const EVENT_FIELDS: Record<string, readonly string[]> = {
  "response.created": ["response"],
  "response.in_progress": ["response"],
  "response.completed": ["response"],
  "response.incomplete": ["response"],
  "response.output_item.added": ["output_index", "item"],
  "response.output_item.done": ["output_index", "item"],
  "response.content_part.added": [...WHERE, "part"],
  "response.content_part.done": [...WHERE, "part"],
  "response.output_text.delta": [...WHERE, "delta", "logprobs"],
  "response.output_text.done": [...WHERE, "text", "logprobs"],
  "response.reasoning_text.delta": [...WHERE, "delta"],
  "response.reasoning_text.done": [...WHERE, "text"],
  "response.function_call_arguments.delta": ["item_id", "output_index", "delta"],
  "response.function_call_arguments.done": ["item_id", "output_index", "name", "arguments"],
};

function shapeProblem(event: Json): string | undefined {
  const type = String(event.type);
  const fields = EVENT_FIELDS[type];
  if (fields === undefined) return `${type} is not an event the gateway sends`;
  const keys = Object.keys(event).filter((k) => k !== "type" && k !== "sequence_number");
  if (canonicalJson([...keys].sort()) !== canonicalJson([...fields].sort())) return `${type} has the fields ${keys.join(", ")}, not ${fields.join(", ")}`;
  if ("content_index" in event && event.content_index !== 0) return "content_index is not 0";
  if ("logprobs" in event && !Array.isArray(event.logprobs)) return "logprobs is not a list";
  return undefined;
}

/** What the opening events say of the response: the final one's, before it had an answer. */
function asBegun(final: Json): Json {
  const { svc_receipt: _receipt, output_text: _text, ...rest } = final;
  return { ...rest, status: "in_progress", incomplete_details: null, output: [], usage: null };
}

/** The items as the events build them, one event at a time; returns what is wrong with an event, if anything. */
class ItemsRebuild {
  readonly items: Json[] = [];
  /** The responses of response.created and response.in_progress. */
  readonly opening: unknown[] = [];

  add(event: Json, i: number): string | undefined {
    const type = String(event.type);
    const shape = shapeProblem(event);
    if (shape !== undefined) return shape;
    if (i < OPENING.length) {
      if (type !== OPENING[i]) return `expected ${OPENING[i]}`;
      this.opening.push(event.response);
      return undefined;
    }
    if (type === "response.completed" || type === "response.incomplete") return isObject(event.response) ? undefined : "no response";
    const index = event.output_index;
    const item = typeof index === "number" ? this.items[index] : undefined;
    if (type === "response.output_item.added") {
      if (index !== this.items.length || !isObject(event.item)) return `output_index is ${String(index)}, expected ${this.items.length}`;
      const begun = { ...event.item };
      if (begun.status !== "in_progress") return "an item is added not in progress";
      this.items.push(begun);
      return undefined;
    }
    if (item === undefined || (type !== "response.output_item.done" && event.item_id !== item.id)) return `no item at output_index ${String(index)} with that item_id`;
    const parts = Array.isArray(item.content) ? (item.content as Json[]) : undefined;
    switch (type) {
      case "response.content_part.added":
        if (parts === undefined || parts.length !== 0 || event.content_index !== 0 || !isObject(event.part) || event.part.text !== "") return "a content part that does not begin the item's one empty part";
        parts.push({ ...event.part });
        return undefined;
      case "response.output_text.delta":
      case "response.reasoning_text.delta": {
        const part = parts?.[0];
        const kind = type === "response.output_text.delta" ? "output_text" : "reasoning_text";
        if (part?.type !== kind || typeof event.delta !== "string") return `a ${kind} delta outside a ${kind} part`;
        part.text = String(part.text) + event.delta;
        // the logprobs of the tokens before this text: the part's own, where the request included them
        const logprobs = (event.logprobs ?? []) as Json[];
        if (logprobs.length > 0) {
          if (!Array.isArray(part.logprobs)) return "logprobs on a delta whose part has none";
          part.logprobs.push(...logprobs);
        }
        return undefined;
      }
      case "response.function_call_arguments.delta":
        if (item.type !== "function_call" || typeof event.delta !== "string") return "an arguments delta outside a function call";
        item.arguments = String(item.arguments) + event.delta;
        return undefined;
      case "response.output_text.done":
      case "response.reasoning_text.done": {
        const part = parts?.[0];
        if (part?.text !== event.text) return "the done text is not the deltas joined";
        return "logprobs" in event && canonicalJson(event.logprobs) !== canonicalJson(part?.logprobs ?? []) ? "the done logprobs are not the deltas'" : undefined;
      }
      case "response.content_part.done":
        return canonicalJson(parts?.[0]) === canonicalJson(event.part) ? undefined : "the done part is not the part the deltas built";
      case "response.function_call_arguments.done":
        return item.arguments === event.arguments && item.name === event.name ? undefined : "the done arguments are not the deltas joined";
      case "response.output_item.done":
        if (!isObject(event.item) || canonicalJson({ ...item, status: event.item.status }) !== canonicalJson(event.item)) return "the done item is not the item the deltas built";
        this.items[index as number] = { ...event.item };
        return undefined;
      default:
        return `${type} is not an event the gateway sends`;
    }
  }
}
