// RECEIPTS.md "Fields outside the receipt": the verifier accepts only what it checked. Saved answers of each kind
// (text, reasoning, tool calls, JSON output; bodies, streams, legacy and embeddings answers, and answers as the openai
// SDKs hand them back) are changed one field at a time, every way the field allows; each change must verify INVALID
// unless the field is listed outside the receipt, and the list must be RECEIPTS.md's table. Then each is written so
// that two JSON readers could read it differently (a name twice with the forged value first, a lone surrogate, a number
// beyond a double, a byte order mark): each must be refused before anything is read (RFC 8259 §4, RFC 7493).
import { readFileSync } from "node:fs";
import OpenAI from "openai";
import { zodFunction, zodResponseFormat, zodTextFormat } from "openai/helpers/zod";
import { describe, expect, it, vi } from "vitest";
import * as z from "zod";
import type { AnswerPiece } from "../../../../src/receipt/answer-record.ts";
import { OUTSIDE_THE_RECEIPT, type OutsideRule } from "../../../../src/receipt/outside-fields.ts";
import { readSavedResponse, verifySavedResponse } from "../../../../src/receipt/saved-response.ts";
import { pythonModelDumpJson, pythonParseToJson } from "../../../fixtures/openai-python.ts";
import {
  savedAnswer, savedEmbeddingsBody, savedLegacyAnswer, savedResponsesAnswer, transcriptOf, trustedKey, type EventWriter, type SavedAnswer, type SavedEvent,
} from "../../../fixtures/saved-answer.ts";

/**
 * The verifier's Ed25519 check is plain JavaScript (several ms a signature on a loaded machine), and most of the
 * thousands of changes below leave the signed receipt as it was. verifySignature is a pure function of its key,
 * domain, signature and the canonical JSON it signs: each distinct one is checked for real, once, and a repeat
 * gets that same answer.
 */
vi.mock("../../../../src/receipt/signature.ts", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../../../src/receipt/signature.ts")>();
  const { canonicalJson } = await import("../../../../src/receipt/canonical-json.ts");
  const checked = new Map<string, boolean>();
  const verifySignature: typeof real.verifySignature = (publicKeyHex, domain, payload, signatureHex) => {
    let signed: string;
    try {
      signed = canonicalJson(payload);
    } catch {
      return real.verifySignature(publicKeyHex, domain, payload, signatureHex);
    }
    const key = JSON.stringify([publicKeyHex, domain, signatureHex, signed]);
    let valid = checked.get(key);
    if (valid === undefined) checked.set(key, (valid = real.verifySignature(publicKeyHex, domain, payload, signatureHex)));
    return valid;
  };
  return { ...real, verifySignature };
});

type Path = readonly (string | number)[];
interface Mutation {
  path: Path;
  how: "changed" | "retyped" | "removed" | "dropped" | "duplicated";
  root: unknown;
}

/** Every single-field change of `root`: each leaf changed and retyped, each key removed, each element dropped and duplicated. */
function* mutations(root: unknown, path: Path = [], at: unknown = root): Generator<Mutation> {
  if (Array.isArray(at)) {
    for (const [i, item] of at.entries()) {
      const inner = [...path, i];
      yield { path: inner, how: "dropped", root: setAt(root, path, at.filter((_, j) => j !== i)) };
      yield { path: inner, how: "duplicated", root: setAt(root, path, [...at.slice(0, i + 1), item, ...at.slice(i + 1)]) };
      yield* mutations(root, inner, item);
    }
    return;
  }
  if (typeof at === "object" && at !== null) {
    for (const [key, value] of Object.entries(at)) {
      const inner = [...path, key];
      yield { path: inner, how: "removed", root: setAt(root, path, Object.fromEntries(Object.entries(at).filter(([k]) => k !== key))) };
      yield* mutations(root, inner, value);
    }
    return;
  }
  if (path.length === 0) return;
  yield { path, how: "changed", root: setAt(root, path, changed(at)) };
  yield { path, how: "retyped", root: setAt(root, path, typeof at === "string" ? 1 : at === null ? 0 : String(at)) };
}

/** Another value of the same type: hex stays hex, so a signature or digest reaches its check, not the format's. */
function changed(value: unknown): unknown {
  if (typeof value === "number") return value + 1;
  if (typeof value === "boolean") return !value;
  if (value === null) return "x";
  const s = String(value);
  if (s === "") return "x";
  const last = s.at(-1)!;
  const next = /[0-9a-f]/.test(last) ? (parseInt(last, 16) ^ 1).toString(16) : last === "x" ? "y" : "x";
  return s.slice(0, -1) + next;
}

function setAt(root: unknown, path: Path, value: unknown): unknown {
  if (path.length === 0) return value;
  type Node = Record<string | number, unknown>;
  const copy = structuredClone(root) as Node;
  const parent = path.slice(0, -1).reduce((node, key) => node[key] as Node, copy);
  parent[path.at(-1)!] = value;
  return copy;
}

/** `choices[0].message.tool_calls[1].function` as RECEIPTS.md names fields: `choices[].message.tool_calls[].function`. */
const fieldOf = (path: Path) => path.map((p) => (typeof p === "number" ? "[]" : `.${p}`)).join("").replace(/^\./, "");

/** The rule for a changed path, or undefined when it is covered. `free` applies to a field and all inside it. */
function outsideRule(field: string): { rule: OutsideRule; exact: boolean; name: string } | undefined {
  for (const entry of OUTSIDE_THE_RECEIPT) {
    for (const name of entry.fields) {
      if (field === name) return { rule: entry.rule, exact: true, name };
      if (entry.rule === "free" && (field.startsWith(`${name}.`) || field.startsWith(`${name}[`))) return { rule: entry.rule, exact: false, name };
    }
  }
  return undefined;
}

const valueAt = (root: unknown, path: Path): unknown => path.reduce((node, key) => (node as Record<string | number, unknown>)[key], root);

type Verdict = "valid" | "invalid" | "unverified";
function verdictOf(text: string): Verdict {
  try {
    return verifySavedResponse(text, trustedKey).status;
  } catch {
    return "invalid"; // not a saved answer at all: `svc-agent verify` says INVALID
  }
}

/** How a fixture's JSON is written: `write(value, path)` for a body (path []) and for each event (path [i]). */
type Writer = (value: unknown, at: Path) => string;

interface Fixture {
  name: string;
  root: unknown;
  text: (root: unknown, write?: Writer) => string;
  /** Where a field's path starts inside `root`: streams are event lists, so their paths begin with the event. */
  fieldPath: (path: Path) => Path;
}
const bodyFixture = (name: string, body: unknown): Fixture => ({ name, root: body, text: (r, write) => (write ? write(r, []) : JSON.stringify(r, null, 2)), fieldPath: (p) => p });
const eventWriter = (write: Writer | undefined): EventWriter | undefined => (write === undefined ? undefined : (e, i) => write(e, [i]));
const streamFixture = (name: string, events: SavedEvent[]): Fixture => ({
  name, root: events, text: (r, write) => transcriptOf(r as SavedEvent[], eventWriter(write)), fieldPath: (p) => p.slice(1),
});

const call = (index: number, id: string, name: string, args: string[]): AnswerPiece[] =>
  [{ type: "tool_call", index, id, name }, ...args.map((text): AnswerPiece => ({ type: "tool_args", index, text }))];
const text = savedAnswer([{ type: "delta", text: "Hel" }, { type: "delta", text: "lo" }, { type: "delta", text: " ✓" }]);
const reasoning = savedAnswer(
  [{ type: "reasoning", text: "The user greets; " }, { type: "reasoning", text: "greet back." }, { type: "delta", text: "Hi there" }],
  { usage: { prompt_tokens: 9, completion_tokens: 12, total_tokens: 21, completion_tokens_details: { reasoning_tokens: 8 } } },
);
const tools = savedAnswer([
  { type: "delta", text: "Checking." },
  ...call(0, "call_weather0", "get_weather", ['{"city":', '"Paris"}']),
  ...call(1, "call_time01", "get_time", ['{"zone":"CET"}']),
]);
const json = savedAnswer([{ type: "delta", text: '{"city":"Paris",' }, { type: "delta", text: '"days":[1,2]}' }]);
const sdkCall = savedAnswer(call(0, "call_weather0", "get_weather", ['{"city":"Paris","days":[1,2]}']));

const responses = savedResponsesAnswer([
  { type: "reasoning", text: "The user asks; " }, { type: "delta", text: "Checking." }, ...call(0, "call_weather0", "get_weather", ['{"city":', '"Paris"}']),
], { usage: { prompt_tokens: 9, completion_tokens: 12, total_tokens: 21, completion_tokens_details: { reasoning_tokens: 4 } } });

const Forecast = z.object({ city: z.string(), days: z.array(z.number()) });
const jsonSchemaEcho = { text: { format: { type: "json_schema", name: "forecast", schema: { type: "object" }, strict: true } } };
const responsesJson = savedResponsesAnswer([{ type: "delta", text: '{"city":"Paris",' }, { type: "delta", text: '"days":[1,2]}' }], { echo: jsonSchemaEcho });
const legacy = savedLegacyAnswer(["Once", " upon"]);

/** Logprob entries (issue 43): a token's id, string, bytes and value, with its alternatives; "é" is two byte tokens. */
const alt = (id: number, bytes: number[], logprob: number) => ({ id, token: new TextDecoder().decode(Uint8Array.from(bytes), { stream: true }), bytes, logprob });
const entry = (id: number, bytes: number[], logprob: number, top: ReturnType<typeof alt>[]) => ({ ...alt(id, bytes, logprob), top_logprobs: top });
const logprobs = (...entries: ReturnType<typeof entry>[]): AnswerPiece => ({ type: "logprobs", logprobs: entries });
const LP = {
  hi: logprobs(entry(72, [72], -0.25, [alt(72, [72], -0.25), alt(104, [104], -1.5)]), entry(105, [105], -0.125, [alt(105, [105], -0.125), alt(33, [33], -3)])),
  accent: logprobs(entry(195, [195], -2, [alt(67, [67], -0.5), alt(195, [195], -2)]), entry(169, [169], -0.0625, [alt(169, [169], -0.0625), alt(161, [161], -4)])),
  stop: logprobs(entry(10, [10], -9999, [alt(46, [46], -0.01), alt(32, [32], -5)])),
};
const withLogprobs: AnswerPiece[] = [LP.hi, { type: "delta", text: "Hi" }, LP.accent, { type: "delta", text: "é" }, LP.stop];
const chatLogprobs = savedAnswer(withLogprobs, { version: 4 });
const legacyLogprobs = savedLegacyAnswer(withLogprobs);
const responsesLogprobs = savedResponsesAnswer([LP.hi, { type: "reasoning", text: "Hm" }, LP.accent, { type: "delta", text: "é" }, LP.stop], { logprobs: true });
const embeddings = savedEmbeddingsBody([[0.5, -0.25, Math.fround(0.1)], [1, 2, Math.fround(-1e-7)]], "float");
const embeddingsBase64 = savedEmbeddingsBody([[0.5, -0.25, Math.fround(0.1)]], "base64");

/** The openai SDK (openai-node) on a fake connection that answers with `reply`: what it hands back is what callers save. */
const sdk = (reply: () => Response) => new OpenAI({ apiKey: "sk-svc_test", baseURL: "http://gateway.invalid/v1", fetch: async () => reply() });
const sseReply = (text: string) => () => new Response(text, { headers: { "content-type": "text/event-stream" } });
const ask = { model: "qwen3-4b", messages: [{ role: "user" as const, content: "Weather in Paris?" }] };
const saved = (handed: unknown): unknown => JSON.parse(JSON.stringify(handed));

/** What a caller saves with `JSON.stringify(await client.chat.completions.parse(…))`, the SDK fed the gateway's body. */
async function savedFromSdk(answer: SavedAnswer, params: Omit<OpenAI.ChatCompletionCreateParamsNonStreaming, "model" | "messages">): Promise<unknown> {
  return saved(await sdk(() => Response.json(answer.body)).chat.completions.parse({ ...ask, ...params } as never));
}

/** `chat.completions.stream(…).finalChatCompletion()`, the SDK fed the gateway's transcript. */
async function savedFromSdkStream(answer: SavedAnswer, params: Omit<OpenAI.ChatCompletionCreateParamsStreaming, "model" | "messages" | "stream"> = {}): Promise<unknown> {
  return saved(await sdk(sseReply(transcriptOf(answer.events))).chat.completions.stream({ ...ask, ...params } as never).finalChatCompletion());
}

const sdkJson = await savedFromSdk(json, { response_format: zodResponseFormat(Forecast, "forecast") });
const sdkTools = await savedFromSdk(sdkCall, { tools: [zodFunction({ name: "get_weather", parameters: Forecast })] });
const sdkStreamText = await savedFromSdkStream(text);
const sdkStreamJson = await savedFromSdkStream(json, { response_format: zodResponseFormat(Forecast, "forecast") });
const sdkStreamTools = await savedFromSdkStream(tools);
const sdkStreamReasoning = await savedFromSdkStream(reasoning);
const weatherTool = { type: "function" as const, name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false }, strict: true };
const sdkResponsesJson = saved(await sdk(() => Response.json(responsesJson.body)).responses.parse({ model: "qwen3-4b", input: "Weather?", text: { format: zodTextFormat(Forecast, "forecast") } }));
const sdkResponsesTools = saved(await sdk(() => Response.json(responses.body)).responses.parse({ model: "qwen3-4b", input: "Weather?", tools: [weatherTool] }));
const sdkResponsesStream = saved(await sdk(sseReply(responses.sse(responses.events))).responses.stream({ model: "qwen3-4b", input: "Weather?" }).finalResponse());
const sdkResponsesStreamJson = saved(
  await sdk(sseReply(responsesJson.sse(responsesJson.events))).responses.stream({ model: "qwen3-4b", input: "Weather?", text: { format: zodTextFormat(Forecast, "forecast") } }).finalResponse(),
);
const python = (dumped: string): unknown => JSON.parse(dumped);
const sdkStreamLogprobs = await savedFromSdkStream(chatLogprobs, { logprobs: true, top_logprobs: 2 });

const fixtures: Fixture[] = [
  bodyFixture("text, body", text.body),
  streamFixture("text, stream", text.events),
  bodyFixture("reasoning, body", reasoning.body),
  streamFixture("reasoning, stream", reasoning.events),
  bodyFixture("tool calls, body", tools.body),
  streamFixture("tool calls, stream", tools.events),
  bodyFixture("JSON output, body", json.body),
  streamFixture("JSON output, stream", json.events),
  bodyFixture("JSON output, saved from the SDK's parse()", sdkJson),
  bodyFixture("tool calls, saved from the SDK's parse()", sdkTools),
  bodyFixture("a receipt alone", text.receipt),
  bodyFixture("reasoning and tool calls, a Responses body", responses.body),
  { name: "reasoning and tool calls, a Responses stream", root: responses.events, text: (r, write) => responses.sse(r as unknown[], eventWriter(write)), fieldPath: (p) => p.slice(1) },
  bodyFixture("a legacy completions body", legacy.body),
  streamFixture("a legacy completions stream", legacy.events),
  bodyFixture("an embeddings body, float", embeddings.body),
  bodyFixture("an embeddings body, base64", embeddingsBase64.body),
  bodyFixture("text, saved from openai-node's stream().finalChatCompletion()", sdkStreamText),
  bodyFixture("JSON output, saved from openai-node's stream().finalChatCompletion() with a response_format", sdkStreamJson),
  bodyFixture("tool calls, saved from openai-node's stream().finalChatCompletion()", sdkStreamTools),
  bodyFixture("JSON output, a Responses body saved from openai-node's responses.parse()", sdkResponsesJson),
  bodyFixture("reasoning and tool calls, a Responses body saved from openai-node's responses.parse() with a strict tool", sdkResponsesTools),
  bodyFixture("reasoning and tool calls, saved from openai-node's responses.stream().finalResponse()", sdkResponsesStream),
  bodyFixture("JSON output, saved from openai-node's responses.stream().finalResponse() with a text format", sdkResponsesStreamJson),
  bodyFixture("text, saved from openai-python's model_dump_json()", python(pythonModelDumpJson(text.body))),
  bodyFixture("reasoning, saved from openai-python's model_dump_json()", python(pythonModelDumpJson(reasoning.body))),
  bodyFixture("tool calls, saved from openai-python's model_dump_json()", python(pythonModelDumpJson(tools.body))),
  bodyFixture("JSON output, saved from openai-python's parse().to_json()", python(pythonParseToJson(json.body, { city: "Paris", days: [1, 2] }))),
  bodyFixture("logprobs, body", chatLogprobs.body),
  streamFixture("logprobs, stream", chatLogprobs.events),
  bodyFixture("logprobs, saved from openai-node's stream().finalChatCompletion()", sdkStreamLogprobs),
  bodyFixture("logprobs, a legacy completions body", legacyLogprobs.body),
  streamFixture("logprobs, a legacy completions stream", legacyLogprobs.events),
  bodyFixture("logprobs beside the content, a Responses body", responsesLogprobs.body),
  { name: "logprobs beside the content, a Responses stream", root: responsesLogprobs.events, text: (r, write) => responsesLogprobs.sse(r as unknown[], eventWriter(write)), fieldPath: (p) => p.slice(1) },
];

const samePath = (a: Path, b: Path) => a.length === b.length && a.every((k, i) => k === b[i]);

/**
 * JSON as JSON.stringify writes it, except at `path`: another literal in place of the value there, or, for a member,
 * its name first given `duplicate` and then its own value, as a forger who knows readers keep the first would write it.
 */
function writerWith(path: Path, edit: { literal: string } | { duplicate: string }): Writer {
  const write = (value: unknown, at: Path): string => {
    if ("literal" in edit && samePath(at, path)) return edit.literal;
    if (Array.isArray(value)) return `[${value.map((v, i) => write(v, [...at, i])).join(",")}]`;
    if (typeof value !== "object" || value === null) return JSON.stringify(value);
    const members = Object.entries(value).map(([k, v]) => {
      const member = `${JSON.stringify(k)}:${write(v, [...at, k])}`;
      return "duplicate" in edit && samePath([...at, k], path) ? `${JSON.stringify(k)}:${edit.duplicate},${member}` : member;
    });
    return `{${members.join(",")}}`;
  };
  return write;
}

/** The same double with more digits than a double holds: JSON.parse reads `n`, a decimal or big-number reader another value. */
function beyondDouble(n: number): string {
  if (n === 0) return "-0";
  const [mantissa, exponent] = JSON.stringify(n).split("e");
  return `${mantissa}${mantissa!.includes(".") ? "" : "."}00000000000000000001${exponent === undefined ? "" : `e${exponent}`}`;
}

/** Every way to write `root` that two JSON readers could read differently, one place at a time. */
function* ambiguities(root: unknown, path: Path = [], at: unknown = root): Generator<{ how: string; path: Path; write: Writer }> {
  if (Array.isArray(at)) {
    for (const [i, item] of at.entries()) yield* ambiguities(root, [...path, i], item);
  } else if (typeof at === "object" && at !== null) {
    for (const [key, value] of Object.entries(at)) {
      const inner = [...path, key];
      const forged = Array.isArray(value) ? "[]" : typeof value === "object" && value !== null ? "{}" : JSON.stringify(changed(value));
      yield { how: "a name twice, the forged value first", path: inner, write: writerWith(inner, { duplicate: forged }) };
      yield* ambiguities(root, inner, value);
    }
  } else if (typeof at === "string") {
    yield { how: "a lone surrogate escaped", path, write: writerWith(path, { literal: JSON.stringify(`${at}\ud800`) }) };
  } else if (typeof at === "number") {
    yield { how: "digits beyond a double", path, write: writerWith(path, { literal: beyondDouble(at) }) };
    yield { how: "a number beyond a double's range", path, write: writerWith(path, { literal: at < 0 ? "-1e400" : "1e400" }) };
  }
}

/** Why the verifier refused to read `text` at all, or undefined when it read it. */
function refusalOf(text: string): string | undefined {
  try {
    verifySavedResponse(text, trustedKey);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Each change with the field it touches, how that field is listed, and the verdict. */
function* outcomes(fixture: Fixture) {
  for (const m of mutations(fixture.root)) {
    const field = fieldOf(fixture.fieldPath(m.path));
    const outside = outsideRule(field);
    // a field that may be absent may be removed: an optional one whatever its value, a null-only one when it was null
    const removable = outside?.rule === "optional" || (outside?.rule === "null" && valueAt(fixture.root, m.path) === null);
    const exempt = outside !== undefined && (outside.rule === "free" || (removable && outside.exact && m.how === "removed"));
    yield { ...m, outside, exempt, verdict: () => verdictOf(fixture.text(m.root)) };
  }
}

describe("RECEIPTS.md Fields outside the receipt: what a client adds", () => {
  it("an answer saved from the openai SDK's parse() verifies VALID, its parsed fields equal to what they parse", () => {
    const message = (saved: unknown) => (saved as { choices: [{ message: { parsed: unknown; tool_calls?: [{ function: { parsed_arguments: unknown } }] } }] }).choices[0].message;
    expect(message(sdkJson).parsed).toEqual({ city: "Paris", days: [1, 2] });
    expect(verifySavedResponse(JSON.stringify(sdkJson), trustedKey)).toMatchObject({ status: "valid", problems: [] });
    expect([message(sdkTools).parsed, message(sdkTools).tool_calls?.[0].function.parsed_arguments]).toEqual([null, { city: "Paris", days: [1, 2] }]);
    expect(verifySavedResponse(JSON.stringify(sdkTools), trustedKey)).toMatchObject({ status: "valid", problems: [] });
    // the calls the receipt covers are the gateway's, without what the SDK added
    expect(readSavedResponse(JSON.stringify(sdkTools)).toolCalls).toEqual(readSavedResponse(JSON.stringify(sdkCall.body)).toolCalls);
  });

  it("parsed and parsed_arguments that are not what content and arguments parse to are INVALID", () => {
    const edited = (path: Path, value: unknown) => verifySavedResponse(JSON.stringify(setAt(sdkTools, path, value)), trustedKey).problems;
    expect(edited(["choices", 0, "message", "parsed"], { city: "Paris", days: [1, 2] })).toEqual(["message.parsed is not the JSON value of message.content"]);
    expect(edited(["choices", 0, "message", "tool_calls", 0, "function", "parsed_arguments"], { city: "Rome", days: [1, 2] }))
      .toEqual(["message.tool_calls[0].function.parsed_arguments is not the JSON value of its arguments"]);
  });

  it("answers saved from openai-node's stream().finalChatCompletion(), responses.parse() and responses.stream().finalResponse() verify VALID", () => {
    type Chat = { choices: [{ logprobs: unknown; message: Record<string, unknown> }] } & Record<string, unknown>;
    const chat = sdkStreamText as Chat;
    // what the SDK adds: the stop chunk's own fields kept, and refusal and logprobs as null
    expect([chat.choices[0].message.refusal, chat.choices[0].logprobs, chat.x_svc_trust, typeof chat.x_svc_timing]).toEqual([null, null, "process", "object"]);
    for (const answer of [sdkStreamText, sdkStreamJson, sdkStreamTools, sdkResponsesJson, sdkResponsesTools, sdkResponsesStream, sdkResponsesStreamJson]) {
      expect(verifySavedResponse(JSON.stringify(answer), trustedKey)).toMatchObject({ status: "valid", problems: [] });
    }
    type Responses = { output: { type: string; parsed_arguments?: unknown; content?: [{ parsed: unknown }] }[]; output_parsed: unknown };
    const json = sdkResponsesJson as Responses;
    expect([json.output[0]!.content![0].parsed, json.output_parsed]).toEqual([{ city: "Paris", days: [1, 2] }, { city: "Paris", days: [1, 2] }]);
    const tools = sdkResponsesTools as Responses;
    expect(tools.output.map((item) => item.parsed_arguments ?? item.content?.[0].parsed)).toEqual([undefined, null, { city: "Paris" }]);
    // the calls and text the receipt covers are the gateway's, without what the SDK added
    expect(readSavedResponse(JSON.stringify(sdkResponsesTools))).toMatchObject({ toolCalls: readSavedResponse(JSON.stringify(responses.body)).toolCalls, problems: [] });
  });

  it("answers saved from openai-python's model_dump_json() and parse().to_json() verify VALID", () => {
    for (const dumped of [pythonModelDumpJson(text.body), pythonModelDumpJson(reasoning.body), pythonModelDumpJson(tools.body), pythonParseToJson(json.body, { city: "Paris", days: [1, 2] }), pythonParseToJson(text.body, null)]) {
      expect(verifySavedResponse(dumped, trustedKey), dumped).toMatchObject({ status: "valid", problems: [] });
    }
    const dumped = JSON.parse(pythonModelDumpJson(text.body)) as { choices: [{ message: Record<string, unknown> }] };
    expect(dumped.choices[0].message).toMatchObject({ refusal: null, annotations: null, audio: null, function_call: null, tool_calls: null });
  });

  it("what an SDK adds that is not derivable from the signed answer is INVALID", () => {
    const edited = (answer: unknown, path: Path, value: unknown) => verifySavedResponse(JSON.stringify(setAt(answer, path, value)), trustedKey);
    const pythonText = JSON.parse(pythonModelDumpJson(text.body)) as unknown;
    const pythonTools = JSON.parse(pythonModelDumpJson(tools.body)) as unknown;
    const cases: [string, unknown, Path, unknown][] = [
      ["a refusal svc never wrote", sdkStreamText, ["choices", 0, "message", "refusal"], "I cannot help with that."],
      ["log probabilities", sdkStreamText, ["choices", 0, "logprobs"], { content: [] }],
      ["a verdict field that is not the receipt's", sdkStreamText, ["x_svc_trust"], "hardware"],
      ["tool_calls null beside calls the receipt covers", pythonTools, ["choices", 0, "message", "tool_calls"], null],
      ["a field no SDK adds, though null", pythonText, ["choices", 0, "message", "tool_call_id"], null],
      ["a system_fingerprint svc never sent", pythonText, ["system_fingerprint"], "fp_1"],
      ["usage details the receipt has not, as null", JSON.parse(pythonModelDumpJson(reasoning.body)), ["usage", "completion_tokens_details"], null],
      ["a parsed output under a text format that is not json_schema", sdkResponsesStream, ["output", 1, "content", 0, "parsed"], "Checking."],
      ["a parsed output that is not the text's JSON", sdkResponsesJson, ["output", 0, "content", 0, "parsed"], { city: "Rome", days: [1, 2] }],
      ["parsed arguments that are not the call's", sdkResponsesTools, ["output", 2, "parsed_arguments"], { city: "Rome" }],
      ["an output_parsed that is not the first parsed", sdkResponsesJson, ["output_parsed"], null],
    ];
    for (const [what, answer, path, value] of cases) expect(edited(answer, path, value).status, what).toBe("invalid");
    // finalChatCompletion() keeps only a stream's last reasoning_content delta: not the reasoning signed (RECEIPTS.md)
    expect((sdkStreamReasoning as { choices: [{ message: { reasoning_content: string } }] }).choices[0].message.reasoning_content).toBe("greet back.");
    expect(verifySavedResponse(JSON.stringify(sdkStreamReasoning), trustedKey).problems).toEqual([expect.stringMatching(/^reasoning_sha256 \(SHA-256 of the reasoning\) is /)]);
  });

  it("RECEIPTS.md's table lists exactly OUTSIDE_THE_RECEIPT, in its words", () => {
    const doc = readFileSync(new URL("../../../../RECEIPTS.md", import.meta.url), "utf8");
    const section = /## Fields outside the receipt\n([\s\S]*?)\n## /.exec(doc)?.[1] ?? "";
    const rows = section.split("\n").filter((l) => l.startsWith("| `"));
    expect(rows).toEqual(OUTSIDE_THE_RECEIPT.map((f) => `| ${f.fields.map((p) => `\`${p}\``).join(", ")} | ${f.where} | ${f.check} |`));
  });
});

describe("RECEIPTS.md Verifying a receipt: every single-field change of a saved answer is INVALID", () => {
  it.each(fixtures.map((f) => [f.name, f] as const))("%s", (name, fixture) => {
    expect(verdictOf(fixture.text(fixture.root)), name).toBe("valid");
    const all = [...outcomes(fixture)];
    const wrong = all.filter((o) => !o.exempt).map((o) => ({ ...o, verdict: o.verdict() })).filter((o) => o.verdict !== "invalid").map((o) => `${o.how} ${o.path.join(".")}: ${o.verdict}`);
    expect(wrong).toEqual([]);
    // dozens of changes per fixture, nearly all of them held to INVALID
    expect(all.filter((o) => !o.exempt).length, name).toBeGreaterThanOrEqual(48);
  });

  it("each field listed as free has some change that verifies VALID: the list names nothing the verifier covers", () => {
    const free = OUTSIDE_THE_RECEIPT.filter((f) => f.rule === "free").flatMap((f) => f.fields);
    const leftValid = new Set(fixtures.flatMap((f) => [...outcomes(f)].filter((o) => o.exempt && o.verdict() === "valid").map((o) => o.outside!.name)));
    expect(free.filter((f) => !leftValid.has(f))).toEqual([]);
  });
});

describe("RFC 8259 §4, RFC 7493: a saved answer that two JSON readers could read differently is refused", () => {
  it.each(fixtures.map((f) => [f.name, f] as const))("%s", (name, fixture) => {
    const plain = fixture.text(fixture.root, (value) => JSON.stringify(value));
    expect(verdictOf(plain), name).toBe("valid");
    const cases = [...ambiguities(fixture.root)].map(({ how, path, write }) => ({ how, path, text: fixture.text(fixture.root, write) }));
    // the file whole: a byte order mark before it, and a raw lone surrogate in it (no UTF-8 file can hold one)
    cases.push({ how: "a byte order mark", path: [], text: `\ufeff${plain}` });
    const quote = plain.indexOf('"', plain.indexOf('"') + 1);
    cases.push({ how: "a raw lone surrogate", path: [], text: `${plain.slice(0, quote)}\udc00${plain.slice(quote)}` });
    // a stream's `data: [DONE]` is no JSON: writing it otherwise changes nothing
    const read = cases.filter((c) => c.text !== plain).map((c) => ({ ...c, refusal: refusalOf(c.text) })).filter((c) => !/not I-JSON|byte order mark|lone surrogate/.test(c.refusal ?? ""));
    expect(read.map((c) => `${c.how} at ${c.path.join(".")}: ${c.refusal ?? verdictOf(c.text)}`)).toEqual([]);
    expect(cases.filter((c) => c.how.startsWith("a name twice")).length, name).toBeGreaterThanOrEqual(10);
  });
});
