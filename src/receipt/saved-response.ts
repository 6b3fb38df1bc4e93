// Reads what a caller saved from the gateway — a non-stream response body, a receipt alone, or an SSE
// transcript — and checks its receipt offline against the content in the same file (`svc-agent verify`, the
// page /verify). Portable: part of the verifier in src/receipt/index.ts, so no node: modules here.
import { RECEIPT_VERSION, RECEIPT_VERSION_LOGPROBS, verifyReceipt } from "./receipt.ts";
import { describeError, isJsonOf, isObject, parseJson } from "./saved-json.ts";
import { BodySchema, readShape, reportedUsageOf, stopFieldsProblem, type Body } from "./saved-shapes.ts";
import { fromStream } from "./saved-stream.ts";
import { fromResponsesBody, fromResponsesStream, isResponsesBody, isResponsesStream } from "./saved-responses.ts";
import { fromLegacyBody, fromLegacyStream, isLegacyBody, isLegacyStream } from "./saved-legacy.ts";
import { fromEmbeddingsBody, isEmbeddingsBody } from "./saved-embeddings.ts";
import { savedTextProblem, trimJsonSpace } from "./saved-text.ts";
import { tokenStringProblem, type TokenLogprob } from "./logprobs.ts";
import type { ReceiptExpectations, ReceiptVerdict, SavedResponse } from "./types.ts";

export type { SavedKind, SavedResponse } from "./types.ts";

/**
 * Throws an Error saying what the file is not when it is none of these: a chat, Responses or legacy completions body
 * or stream, an embeddings body, a receipt; or when JSON readers could read it differently (saved-text.ts, strict-json.ts).
 */
export function readSavedResponse(text: string): SavedResponse {
  const problem = savedTextProblem(text);
  if (problem !== undefined) throw new Error(problem);
  const body = trimJsonSpace(withoutHttpHead(text));
  if (body.startsWith("{")) return fromJson(parseJson(body, "the file", "the file is neither valid JSON nor an SSE transcript"));
  if (/^(data|event|id|retry):|^:/m.test(body)) {
    if (isResponsesStream(body)) return fromResponsesStream(body);
    return isLegacyStream(body) ? fromLegacyStream(body) : fromStream(body);
  }
  throw new Error("the file is not a response body, a receipt or an SSE transcript");
}

/** One call for SDK users and the CLI: read the saved text, then check its receipt against its content. */
export function verifySavedResponse(text: string, expect: SavedExpectations = {}): ReceiptVerdict & { saved: SavedResponse } {
  return checkSavedResponse(readSavedResponse(text), expect);
}

type SavedExpectations = Omit<ReceiptExpectations, "content" | "usage" | "finishReason" | "toolCalls" | "reasoning" | "logprobs" | "contentLogprobs">;

/** Checks what `readSavedResponse` found: its receipt against the content, usage and finish reason beside it. */
export function checkSavedResponse(saved: SavedResponse, expect: SavedExpectations = {}): ReceiptVerdict & { saved: SavedResponse } {
  if (saved.receipt === undefined) return { status: "invalid", valid: false, checks: [], problems: saved.problems, saved };
  const fromFile: ReceiptExpectations = {
    ...(saved.content === undefined ? {} : { content: saved.content }),
    ...(saved.logprobs === undefined ? {} : { logprobs: saved.logprobs }),
    ...(saved.contentLogprobs === undefined ? {} : { contentLogprobs: saved.contentLogprobs }),
    ...(saved.toolCalls === undefined ? {} : { toolCalls: saved.toolCalls }),
    ...(saved.reasoning === undefined ? {} : { reasoning: saved.reasoning }),
    ...(saved.usage === undefined ? {} : { usage: saved.usage }),
    ...(saved.finishReason === undefined ? {} : { finishReason: saved.finishReason }),
  };
  const verdict = verifyReceipt(saved.receipt, { ...expect, ...fromFile });
  // a gateway that completes every request (--audit) has each receipt commit to logprobs it shows only to who asked
  if (verdict.receipt?.version === RECEIPT_VERSION_LOGPROBS && saved.logprobs === undefined && saved.contentLogprobs === undefined && saved.kind !== "receipt") {
    verdict.checks.push({ check: "logprobs", ok: true, detail: "logprobs committed, not shown: the receipt covers every token's logprobs (logprobs_sha256), and the answer shows none" });
  }
  const problems = [...saved.problems, ...verdict.problems];
  // each token's string is a function of its bytes: an answer whose strings are not is not what a gateway relays
  const strings = tokenStringProblem([...(saved.logprobs ?? []), ...(saved.contentLogprobs ?? [])] as TokenLogprob[]);
  if (strings !== undefined) problems.push(strings);
  // a Responses answer is always sealed with reasoning apart, so only a version covering calls and reasoning (v2, or
  // v3 with the cache count) vouches for its items
  if ((saved.kind === "responses" || saved.kind === "responses-stream") && verdict.receipt?.version === RECEIPT_VERSION) {
    problems.push("the receipt version is 1, expected 2 or 3");
  }
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

function fromJson(json: unknown): SavedResponse {
  if (!isObject(json)) throw new Error("the JSON in the file is not an object");
  if ("error" in json && json.error !== null) throw new Error(`the file holds an error response, which carries no receipt: ${describeError(json.error)}`);
  if (isResponsesBody(json)) return fromResponsesBody(json);
  if (isLegacyBody(json)) return fromLegacyBody(json);
  if (isEmbeddingsBody(json)) return fromEmbeddingsBody(json);
  if (!("choices" in json)) {
    if ("signature" in json) return { kind: "receipt", receipt: json, problems: [] };
    throw new Error("the JSON is neither a chat completion, a Responses response, a legacy completion, an embeddings list nor a receipt");
  }
  const problems = "svc_receipt" in json ? [] : ["the response carries no svc_receipt"];
  const read = readShape(BodySchema, json);
  // an answer in a shape the gateway never sends is not read: the receipt cannot vouch for what it means
  if (read.problem !== undefined) return { kind: "response", receipt: json.svc_receipt, problems: [...problems, `the response is not in the gateway's shape: ${read.problem}`] };
  const body = read.data;
  const { message, finish_reason } = body.choices[0];
  const calls = message.tool_calls ?? [];
  if (message.content === null && calls.length === 0) problems.push("message.content is null in an answer without tool calls");
  problems.push(...clientFieldProblems(body));
  return {
    kind: "response",
    receipt: body.svc_receipt,
    content: message.content ?? "",
    // null or absent: not shown (a complete request's receipt commits to them all the same)
    logprobs: body.choices[0].logprobs?.content,
    // the receipt covers each call as the gateway sent it, without what a client added
    toolCalls: calls.map(({ id, type, function: { name, arguments: args } }) => ({ id, type, function: { name, arguments: args } })),
    reasoning: message.reasoning_content ?? null,
    usage: reportedUsageOf(body.usage),
    finishReason: finish_reason,
    problems,
  };
}

const VERDICT_FIELDS = ["x_svc_trust", "x_svc_model", "x_svc_provider"] as const;

/**
 * What SDKs add that is not null (RECEIPTS.md "Fields outside the receipt"): `parse()`'s fields, absent, null, or what
 * they parse; the stop chunk's verdict fields that `stream().finalChatCompletion()` keeps, all three or none, the receipt's.
 */
function clientFieldProblems(body: Body): string[] {
  const problems: string[] = [];
  if (VERDICT_FIELDS.some((field) => body[field] !== undefined)) {
    const problem = stopFieldsProblem(body, true);
    if (problem !== undefined) problems.push(problem);
  }
  const { message } = body.choices[0];
  const { parsed } = message;
  if (parsed !== undefined && parsed !== null && !isJsonOf(parsed, message.content)) problems.push("message.parsed is not the JSON value of message.content");
  for (const [i, call] of (message.tool_calls ?? []).entries()) {
    const args = call.function.parsed_arguments;
    if (args !== undefined && args !== null && !isJsonOf(args, call.function.arguments)) {
      problems.push(`message.tool_calls[${i}].function.parsed_arguments is not the JSON value of its arguments`);
    }
  }
  return problems;
}
