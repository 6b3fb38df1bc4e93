// What `svc-agent verify` and `verifySavedResponse` read (RECEIPTS.md "Verifying a receipt"): a saved
// non-stream body, a receipt alone, or an SSE transcript, checked against the content in the same file.
import { describe, expect, it } from "vitest";
import { readSavedResponse, verifySavedResponse } from "../../../../src/receipt/saved-response.ts";
import { Signer } from "../../../../src/crypto/signing.ts";
import { savedAnswer, transcriptOf, trustedKey as trusted, type SavedEvent } from "../../../fixtures/saved-answer.ts";

const pieces = ["Hel", "lo", " ✓"];
const content = pieces.join("");
const text = savedAnswer(pieces.map((p) => ({ type: "delta", text: p })));
const { receipt } = text;
const usage = receipt.usage;

const body = (overrides: Record<string, unknown> = {}) => JSON.stringify({ ...text.body, ...overrides });
/** The text answer's transcript with its content chunks carrying `parts` instead. */
const transcript = (parts: string[] = pieces) => {
  const [role, ...rest] = text.events;
  const content = rest.slice(0, pieces.length) as Record<string, unknown>[];
  const chunks = parts.map((p, i) => ({ ...content[i % content.length]!, choices: [{ index: 0, delta: { content: p }, finish_reason: null }] }));
  return transcriptOf([role!, ...chunks, ...rest.slice(pieces.length)]);
};
const message = (m: Record<string, unknown>, finish_reason = "stop") => ({ choices: [{ index: 0, message: { role: "assistant", ...m }, finish_reason }] });
const errorEvent: SavedEvent = { error: { code: "provider_error", message: "gone" } };

describe("svc-agent verify: what it reads", () => {
  it("a non-stream body: its receipt, content, usage and finish reason", () => {
    expect(readSavedResponse(body())).toEqual({ kind: "response", receipt, content, toolCalls: [], reasoning: null, logprobs: undefined, usage, finishReason: "stop", problems: [] });
    expect(verifySavedResponse(body(), trusted)).toMatchObject({ status: "valid", valid: true });
  });

  it("a body saved with curl -i: the HTTP head is skipped", () => {
    const saved = `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-svc-trust: process\r\n\r\n${body()}`;
    expect(verifySavedResponse(saved, trusted).valid).toBe(true);
  });

  it("a receipt alone: checked, with the response hash left for want of content", () => {
    const saved = readSavedResponse(JSON.stringify(receipt));
    expect(saved).toMatchObject({ kind: "receipt", receipt });
    expect(saved.content).toBeUndefined();
    expect(verifySavedResponse(JSON.stringify(receipt)).checks.map((c) => c.check)).not.toContain("response_sha256");
  });

  it("an SSE transcript: the deltas joined in order are the content", () => {
    expect(readSavedResponse(transcript())).toEqual({ kind: "stream", receipt, content, toolCalls: [], reasoning: null, logprobs: undefined, usage, finishReason: "stop", problems: [] });
    expect(verifySavedResponse(transcript(), trusted).valid).toBe(true);
    expect(verifySavedResponse(transcript(["Hel", " ✓", "lo"])).problems).toEqual([expect.stringMatching(/^response_sha256/)]);
  });

  it("a file that holds together but names no trusted key is unverified, and valid is false", () => {
    expect(verifySavedResponse(body())).toMatchObject({ status: "unverified", valid: false, problems: [] });
    expect(verifySavedResponse(transcript(), { providerId: receipt.provider_id })).toMatchObject({ status: "valid", valid: true });
    const other = Signer.fromSeed(Buffer.alloc(32, 10)).publicKey;
    expect(verifySavedResponse(body(), { signingKey: other })).toMatchObject({ status: "invalid", valid: false });
  });

  it("edited content, usage or finish reason in a body fail", () => {
    expect(verifySavedResponse(body(message({ content: "Hello" }))).problems).toEqual([expect.stringMatching(/^response_sha256/)]);
    expect(verifySavedResponse(body({ usage: { ...usage, completion_tokens: 30, total_tokens: 37 } })).problems).toEqual([expect.stringMatching(/reported usage/)]);
    expect(verifySavedResponse(body(message({ content }, "length"))).problems).toEqual([expect.stringMatching(/^finish_reason/)]);
  });

  it("a failed stream, a stream without [DONE] and a body without a receipt are not vouched for", () => {
    const failed = transcriptOf([...text.events.slice(0, 2), errorEvent]);
    expect(verifySavedResponse(failed)).toMatchObject({ status: "invalid", valid: false, problems: [expect.stringMatching(/stream failed \(provider_error: gone\)/), "no chunk carries svc_receipt"] });
    expect(verifySavedResponse(transcript().replace("data: [DONE]\n\n", "")).problems).toEqual(["the transcript ends without data: [DONE]"]);
    expect(verifySavedResponse(body({ svc_receipt: undefined })).problems).toEqual(["the response carries no svc_receipt"]);
  });

  it("says what a file is not", () => {
    expect(() => readSavedResponse('{"error":{"code":"receipt_invalid","message":"bad"}}')).toThrow(/error response.*receipt_invalid: bad/);
    expect(() => readSavedResponse("{not json")).toThrow(/neither valid JSON nor an SSE transcript/);
    expect(() => readSavedResponse("hello")).toThrow(/not a response body, a receipt or an SSE transcript/);
    expect(readSavedResponse('{"choices": 1}').problems).toEqual(["the response carries no svc_receipt", expect.stringMatching(/^the response is not in the gateway's shape: /)]);
    expect(() => readSavedResponse("[1,2]")).toThrow(/not a response body/);
  });
});

describe("svc-agent verify: the answer is rebuilt strictly", () => {
  const calls = savedAnswer([
    { type: "tool_call", index: 0, id: "call_a", name: "get_weather" },
    { type: "tool_args", index: 0, text: '{"city":' },
    { type: "tool_args", index: 0, text: '"Paris"}' },
  ]);
  /** The tool-call transcript with event `i` replaced. */
  const withEvent = (i: number, change: (e: Record<string, unknown>) => Record<string, unknown>) =>
    transcriptOf(calls.events.map((e, j) => (j === i && e !== "[DONE]" ? change(e) : e)));
  const delta = (d: Record<string, unknown>) => (e: Record<string, unknown>) => ({ ...e, choices: [{ index: 0, delta: d, finish_reason: null }] });

  it("a tool call streamed in pieces verifies", () => {
    expect(verifySavedResponse(transcriptOf(calls.events), trusted)).toMatchObject({ status: "valid", problems: [] });
    expect(verifySavedResponse(JSON.stringify(calls.body), trusted)).toMatchObject({ status: "valid", problems: [] });
  });

  it("a delta without an id continues the call at its index: a name that changes mid-call is invalid", () => {
    const renamed = withEvent(2, delta({ tool_calls: [{ index: 0, function: { name: "delete_files", arguments: '{"city":' } }] }));
    expect(verifySavedResponse(renamed, trusted).problems).toEqual(["event 3: delta.tool_calls: tool call 0 changes its name from get_weather to delete_files"]);
    const sameName = withEvent(2, delta({ tool_calls: [{ index: 0, function: { name: "get_weather", arguments: '{"city":' } }] }));
    expect(verifySavedResponse(sameName, trusted)).toMatchObject({ status: "valid", problems: [] });
    const orphan = withEvent(2, delta({ tool_calls: [{ index: 1, function: { arguments: '{"city":' } }] }));
    expect(verifySavedResponse(orphan, trusted).problems).toEqual(["event 3: delta.tool_calls: a delta continues tool call 1, which has not begun"]);
  });

  it("choices[].index must be 0, and there is exactly one choice", () => {
    const moved = withEvent(2, (e) => ({ ...e, choices: [{ index: 1, delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }, finish_reason: null }] }));
    expect(verifySavedResponse(moved, trusted).problems).toEqual([expect.stringMatching(/^event 3: choices\[0\]\.index: /)]);
    expect(verifySavedResponse(body({ choices: [{ ...(text.body.choices as unknown[])[0] as object, index: 2 }] }), trusted).problems)
      .toEqual([expect.stringMatching(/^the response is not in the gateway's shape: choices\[0\]\.index/)]);
  });

  it("non-string content is invalid, in a body and in a stream", () => {
    expect(verifySavedResponse(body(message({ content: ["Hello ✓"] })), trusted).status).toBe("invalid");
    expect(verifySavedResponse(body(message({ content: null })), trusted).problems)
      .toEqual(["message.content is null in an answer without tool calls", expect.stringMatching(/^response_sha256/)]);
    const stream = transcriptOf(text.events.map((e, i) => (i === 1 ? delta({ content: 42 })(e as Record<string, unknown>) : e)));
    expect(verifySavedResponse(stream, trusted).problems).toEqual([expect.stringMatching(/^event 2: choices\[0\]\.delta\.content: /)]);
  });

  it("the first fault is reported once, however many chunks follow it", () => {
    const bad = { ...(text.events[1] as object), tip: 1 };
    const stream = transcriptOf([text.events[0]!, ...Array.from({ length: 1000 }, () => bad), ...text.events.slice(-2), ...Array.from({ length: 1000 }, () => bad)]);
    expect(verifySavedResponse(stream, trusted).problems).toEqual(['event 2: the object: Unrecognized key: "tip"', "events follow data: [DONE]", "a chunk follows the stop chunk"]);
  });

  it("a field the gateway never sends is invalid, and so is a stop chunk whose x_svc_* fields are not the receipt's", () => {
    expect(verifySavedResponse(body({ tip: 1 }), trusted).problems).toEqual([expect.stringMatching(/^the response is not in the gateway's shape: the object: Unrecognized key: "tip"/)]);
    const stop = calls.events.length - 2;
    expect(verifySavedResponse(withEvent(stop, (e) => ({ ...e, x_svc_trust: "hardware" })), trusted).problems).toEqual([`event ${stop + 1}: x_svc_trust is hardware, not the receipt's trust_level`]);
  });
});

describe("svc-agent verify: a v3 answer's cached tokens", () => {
  const v3 = savedAnswer(pieces.map((p) => ({ type: "delta", text: p })), { version: 3, cachedTokens: 5 });
  const stop = v3.events.at(-2) as Record<string, unknown>;

  it("a body and a transcript carry usage.prompt_tokens_details.cached_tokens, and verify", () => {
    expect(v3.body.usage).toEqual({ ...v3.receipt.usage, prompt_tokens_details: { cached_tokens: 5 } });
    expect(stop.usage).toEqual(v3.body.usage);
    expect(verifySavedResponse(JSON.stringify(v3.body), trusted)).toMatchObject({ status: "valid", problems: [] });
    expect(verifySavedResponse(transcriptOf(v3.events), trusted)).toMatchObject({ status: "valid", problems: [] });
  });

  it("a cached count edited in a saved body or stream fails", () => {
    const edited = { ...v3.receipt.usage, prompt_tokens_details: { cached_tokens: 7 } };
    expect(verifySavedResponse(JSON.stringify({ ...v3.body, usage: edited })).problems).toEqual([expect.stringMatching(/reported usage/)]);
    const events = v3.events.map((e) => (e === stop ? { ...stop, usage: edited } : e));
    expect(verifySavedResponse(transcriptOf(events)).problems).toEqual([expect.stringMatching(/reported usage/)]);
  });
});
