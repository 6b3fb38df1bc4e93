// What `svc-agent verify` and `verifySavedResponse` read (RECEIPTS.md "Verifying a receipt"): a saved
// non-stream body, a receipt alone, or an SSE transcript, checked against the content in the same file.
import { describe, expect, it } from "vitest";
import { signReceipt } from "../../../../src/receipt/receipt.ts";
import { readSavedResponse, verifySavedResponse } from "../../../../src/receipt/saved-response.ts";
import { Signer } from "../../../../src/crypto/signing.ts";
import { receiptPayload } from "../../../fixtures/receipt-payload.ts";

const key = Signer.fromSeed(Buffer.alloc(32, 9));
const pieces = ["Hel", "lo", " ✓"];
const content = pieces.join("");
const usage = { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 };
const payload = receiptPayload(key, content, { usage });
const receipt = signReceipt(key, payload);
/** The key known some other way (`--key`): what makes a receipt that holds `valid` rather than `unverified`. */
const trusted = { signingKey: key.publicKey };

const body = (overrides: Record<string, unknown> = {}) =>
  JSON.stringify({
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1,
    model: "qwen3-4b",
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
    usage,
    svc_receipt: receipt,
    ...overrides,
  });

const chunk = (delta: Record<string, string>, extra: Record<string, unknown> = {}) =>
  `data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: null }], ...extra })}\n\n`;
const stopChunk = `data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage, svc_receipt: receipt })}\n\n`;
const transcript = (parts: string[] = pieces) =>
  [chunk({ role: "assistant", content: "" }), ": keepalive\n\n", ...parts.map((p) => chunk({ content: p })), stopChunk, "data: [DONE]\n\n"].join("");

describe("svc-agent verify: what it reads", () => {
  it("a non-stream body: its receipt, content, usage and finish reason", () => {
    expect(readSavedResponse(body())).toEqual({ kind: "response", receipt, content, toolCalls: [], reasoning: null, usage, finishReason: "stop", problems: [] });
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
    expect(readSavedResponse(transcript())).toEqual({ kind: "stream", receipt, content, toolCalls: [], reasoning: null, usage, finishReason: "stop", problems: [] });
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
    expect(verifySavedResponse(body({ choices: [{ index: 0, message: { role: "assistant", content: "Hello" }, finish_reason: "stop" }] })).problems)
      .toEqual([expect.stringMatching(/^response_sha256/)]);
    expect(verifySavedResponse(body({ usage: { ...usage, completion_tokens: 30, total_tokens: 37 } })).problems).toEqual([expect.stringMatching(/reported usage/)]);
    expect(verifySavedResponse(body({ choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "length" }] })).problems)
      .toEqual([expect.stringMatching(/^finish_reason/)]);
  });

  it("a failed stream, a stream without [DONE] and a body without a receipt are not vouched for", () => {
    const failed = [chunk({ role: "assistant", content: "" }), chunk({ content: "Hel" }), `data: ${JSON.stringify({ error: { code: "provider_error", message: "gone" } })}\n\n`].join("");
    expect(verifySavedResponse(failed)).toMatchObject({ status: "invalid", valid: false, problems: [expect.stringMatching(/stream failed \(provider_error: gone\)/), "no chunk carries svc_receipt"] });
    expect(verifySavedResponse(transcript().replace("data: [DONE]\n\n", "")).problems).toEqual(["the transcript ends without data: [DONE]"]);
    expect(verifySavedResponse(body({ svc_receipt: undefined })).problems).toEqual(["the response carries no svc_receipt"]);
  });

  it("says what a file is not", () => {
    expect(() => readSavedResponse('{"error":{"code":"receipt_invalid","message":"bad"}}')).toThrow(/error response.*receipt_invalid: bad/);
    expect(() => readSavedResponse("{not json")).toThrow(/neither valid JSON nor an SSE transcript/);
    expect(() => readSavedResponse("hello")).toThrow(/not a response body, a receipt or an SSE transcript/);
    expect(() => readSavedResponse('{"choices": 1}')).not.toThrow();
    expect(() => readSavedResponse("[1,2]")).toThrow(/not a response body/);
  });
});
