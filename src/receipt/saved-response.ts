// Reads what a caller saved from the gateway — a non-stream response body, a receipt alone, or an SSE
// transcript — and checks its receipt offline against the content in the same file (`svc-agent verify`, the
// page /verify). Portable: part of the verifier in src/receipt/index.ts, so no node: modules here.
import { createParser } from "eventsource-parser";
import { AnswerRecord } from "./answer-record.ts";
import { verifyReceipt } from "./receipt.ts";
import type { ReceiptExpectations, ReceiptVerdict, SavedResponse } from "./types.ts";

export type { SavedKind, SavedResponse } from "./types.ts";

/** Throws an Error saying what the file is not when it is none of the three. */
export function readSavedResponse(text: string): SavedResponse {
  const body = withoutHttpHead(text).trim();
  if (body.startsWith("{")) return fromJson(parseJson(body, "the file is neither valid JSON nor an SSE transcript"));
  if (/^(data|event|id|retry):|^:/m.test(body)) return fromStream(body);
  throw new Error("the file is not a response body, a receipt or an SSE transcript");
}

/** One call for SDK users and the CLI: read the saved text, then check its receipt against its content. */
export function verifySavedResponse(text: string, expect: SavedExpectations = {}): ReceiptVerdict & { saved: SavedResponse } {
  return checkSavedResponse(readSavedResponse(text), expect);
}

type SavedExpectations = Omit<ReceiptExpectations, "content" | "usage" | "finishReason" | "toolCalls" | "reasoning">;

/** Checks what `readSavedResponse` found: its receipt against the content, usage and finish reason beside it. */
export function checkSavedResponse(saved: SavedResponse, expect: SavedExpectations = {}): ReceiptVerdict & { saved: SavedResponse } {
  if (saved.receipt === undefined) return { status: "invalid", valid: false, checks: [], problems: saved.problems, saved };
  const fromFile: ReceiptExpectations = {
    ...(saved.content === undefined ? {} : { content: saved.content }),
    ...(saved.toolCalls === undefined ? {} : { toolCalls: saved.toolCalls }),
    ...(saved.reasoning === undefined ? {} : { reasoning: saved.reasoning }),
    ...(saved.usage === undefined ? {} : { usage: saved.usage }),
    ...(saved.finishReason === undefined ? {} : { finishReason: saved.finishReason }),
  };
  const verdict = verifyReceipt(saved.receipt, { ...expect, ...fromFile });
  const problems = [...saved.problems, ...verdict.problems];
  // a file that cannot vouch for its answer is invalid even when the receipt in it holds
  const status = problems.length > 0 ? "invalid" : verdict.status;
  return { ...verdict, status, valid: status === "valid", problems, saved };
}

// `curl -i` saves the status line and headers too
function withoutHttpHead(text: string): string {
  if (!text.startsWith("HTTP/")) return text;
  const end = text.search(/\r?\n\r?\n/);
  return end === -1 ? "" : text.slice(end).replace(/^\r?\n\r?\n/, "");
}

function parseJson(text: string, why: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(why);
  }
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** `choices[0]` of a completion or chunk, or an empty object when the file has none. */
function firstChoice(json: Json): Json {
  return Array.isArray(json.choices) && isObject(json.choices[0]) ? json.choices[0] : {};
}

function fromJson(json: unknown): SavedResponse {
  if (!isObject(json)) throw new Error("the JSON in the file is not an object");
  if ("error" in json) throw new Error(`the file holds an error response, which carries no receipt: ${describeError(json.error)}`);
  if (!("choices" in json)) {
    if ("signature" in json) return { kind: "receipt", receipt: json, problems: [] };
    throw new Error("the JSON is neither a chat completion nor a receipt");
  }
  const choice = firstChoice(json);
  const message = isObject(choice.message) ? choice.message : {};
  const problems = "svc_receipt" in json ? [] : ["the response carries no svc_receipt"];
  return {
    kind: "response",
    receipt: json.svc_receipt,
    content: typeof message.content === "string" ? message.content : "",
    toolCalls: Array.isArray(message.tool_calls) ? message.tool_calls : [],
    reasoning: typeof message.reasoning_content === "string" ? message.reasoning_content : null,
    usage: json.usage,
    finishReason: typeof choice.finish_reason === "string" ? choice.finish_reason : null,
    problems,
  };
}

function fromStream(text: string): SavedResponse {
  const data: string[] = [];
  const parser = createParser({ onEvent: (event) => data.push(event.data) });
  // a transcript cut before its final blank line still has its last event read
  parser.feed(`${text}\n\n`);
  const problems: string[] = [];
  const answer = new AnswerRecord();
  let stop: Json | undefined;
  let done = false;
  for (const [i, raw] of data.entries()) {
    if (raw === "[DONE]") {
      done = true;
      if (i !== data.length - 1) problems.push("events follow data: [DONE]");
      continue;
    }
    const chunk = parseJson(raw, `event ${i + 1} is not JSON`);
    if (!isObject(chunk)) throw new Error(`event ${i + 1} is not a JSON object`);
    if ("error" in chunk) {
      problems.push(`the stream failed (${describeError(chunk.error)}); a failed stream has no receipt`);
      continue;
    }
    if (stop) problems.push("a chunk follows the stop chunk");
    const choice = firstChoice(chunk);
    const delta = isObject(choice.delta) ? choice.delta : {};
    if (typeof delta.content === "string") answer.add({ type: "delta", text: delta.content });
    if (typeof delta.reasoning_content === "string") answer.add({ type: "reasoning", text: delta.reasoning_content });
    if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls) addCallDelta(answer, call, problems);
    if ("svc_receipt" in chunk) stop = chunk;
  }
  if (!stop) problems.push("no chunk carries svc_receipt");
  else if (!done) problems.push("the transcript ends without data: [DONE]");
  const choice = stop ? firstChoice(stop) : {};
  return {
    kind: "stream",
    receipt: stop?.svc_receipt,
    content: answer.content,
    toolCalls: answer.toolCalls,
    reasoning: answer.reasoning,
    usage: stop?.usage,
    finishReason: typeof choice.finish_reason === "string" ? choice.finish_reason : null,
    problems,
  };
}

/** One `delta.tool_calls[i]` of a transcript: a call's first delta names it, later ones add arguments. */
function addCallDelta(answer: AnswerRecord, delta: unknown, problems: string[]): void {
  if (!isObject(delta) || typeof delta.index !== "number") return void problems.push("a delta.tool_calls entry has no index");
  const fn = isObject(delta.function) ? delta.function : {};
  const args = typeof fn.arguments === "string" ? fn.arguments : "";
  try {
    if (typeof delta.id === "string") answer.add({ type: "tool_call", index: delta.index, id: delta.id, name: typeof fn.name === "string" ? fn.name : "" });
    if (args !== "") answer.add({ type: "tool_args", index: delta.index, text: args });
  } catch (err) {
    problems.push(`delta.tool_calls: ${(err as Error).message}`);
  }
}

function describeError(error: unknown): string {
  if (!isObject(error)) return "no details";
  return [error.code, error.message].filter((part) => typeof part === "string").join(": ") || "no details";
}
