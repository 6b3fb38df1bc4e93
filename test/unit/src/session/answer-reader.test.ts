// DESIGN §5, §8 and §10, the answer side both the gateway and a caller's client run: opened frames become pieces held
// to the answer's bounds and assembled into the record the receipt must cover, and the receipt is checked against
// the provider as proven, the catalog's pins and the sealed plaintext's hash.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Signer } from "../../../../src/crypto/signing.ts";
import { sha256Hex } from "../../../../src/receipt/sha256.ts";
import { providerIdOf } from "../../../../src/receipt/provider-id.ts";
import { reasoningSha256, RECEIPT_VERSION_CACHE, signReceipt, toolCallsSha256, type ReceiptPayload } from "../../../../src/receipt/receipt.ts";
import { utf8Length } from "../../../../src/session/answer-bounds.ts";
import { AnswerReader, checkReceipt, type AnswerExpectations } from "../../../../src/session/answer-reader.ts";
import type { SessionPlaintext } from "../../../../src/session/sealed-request.ts";
import { receiptPayload } from "../../../fixtures/receipt-payload.ts";

const signer = Signer.fromSeed(new Uint8Array(32).fill(3));
const provider = { id: providerIdOf(signer.publicKey), signing_key: signer.publicKey, trust: "process" as const };
const entry = { alias: "qwen3-4b", hub_id: "Qwen/Qwen3-4B-GGUF", file: "q.gguf", revision: "a".repeat(40), sha256: "b".repeat(64), size_bytes: 1, min_memory_gb: 1, license: "Apache-2.0" };
const body: SessionPlaintext = { model: "qwen3-4b", messages: [{ role: "user", content: "hi" }], max_tokens: 4, temperature: 0.7, nonce: "c".repeat(32), client_nonce: null };
const plaintext = JSON.stringify(body);
const expectations: AnswerExpectations = { provider, entry, body, requestSha256: sha256Hex(plaintext) };

/** The v3 receipt an honest agent signs for `content`. */
function receiptFor(content: string, overrides: Partial<ReceiptPayload> = {}) {
  const payload = {
    ...receiptPayload(signer, content, { request_sha256: sha256Hex(plaintext), usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } }),
    version: RECEIPT_VERSION_CACHE,
    tool_calls_sha256: toolCallsSha256([]),
    reasoning_sha256: reasoningSha256(null),
    cached_tokens: 0,
    ...overrides,
  } as ReceiptPayload;
  return signReceipt(signer, payload);
}

const frame = (value: unknown) => JSON.stringify(value);

describe("DESIGN §5 the answer side: frames to a verified answer", () => {
  it("pieces and a burst are added in order; the done frame's receipt covers them and ends the session", () => {
    const reader = new AnswerReader(expectations);
    expect(reader.read(frame({ type: "delta", text: "ab" }))).toEqual({ pieces: [{ type: "delta", text: "ab" }] });
    expect(reader.read(frame({ type: "pieces", pieces: [{ type: "delta", text: "c" }] })).pieces).toHaveLength(1);
    const receipt = receiptFor("abc");
    const read = reader.read(frame({ type: "done", receipt, first_token_ms: 12 }));
    expect(read.end).toMatchObject({ type: "done", firstTokenMs: 12, receipt: { signature: receipt.signature } });
    expect(reader.answer.content).toBe("abc");
  });

  it("a non-stream answer rides in the done frame beside its receipt", () => {
    const reader = new AnswerReader(expectations);
    const read = reader.read(frame({ type: "done", receipt: receiptFor("whole"), pieces: [{ type: "delta", text: "whole" }] }));
    expect(read.pieces).toEqual([{ type: "delta", text: "whole" }]);
    expect(read.end?.type).toBe("done");
  });

  it("a receipt for other content, another model file, other sealed bytes or another key does not verify", () => {
    const cases = [
      receiptFor("not what was sent"),
      receiptFor("abc", { model_sha256: "d".repeat(64) }),
      receiptFor("abc", { request_sha256: sha256Hex("another request") }),
      signReceipt(Signer.fromSeed(new Uint8Array(32).fill(4)), { ...receiptFor("abc"), signature: undefined, signing_key: undefined } as unknown as ReceiptPayload),
    ];
    for (const receipt of cases) {
      const reader = new AnswerReader(expectations);
      reader.read(frame({ type: "delta", text: "abc" }));
      expect(reader.read(frame({ type: "done", receipt })).end?.type).toBe("receipt_invalid");
    }
  });

  it("checks everything but the answer when it holds no answer (the gateway of a gateway-blind request)", () => {
    const receipt = receiptFor("anything");
    expect(checkReceipt(receipt, expectations, undefined).valid).toBe(true);
    expect(checkReceipt(receipt, { ...expectations, requestSha256: sha256Hex("x") }, undefined).valid).toBe(false);
    expect(checkReceipt(receipt, { ...expectations, provider: { ...provider, trust: "hardware", serial: "S1" } }, undefined).valid).toBe(false);
  });
});

describe("DESIGN §8 the answer side: a provider is a stranger", () => {
  it("a piece past the bounds ends the session as the provider's fault, after the pieces within them", () => {
    const reader = new AnswerReader(expectations);
    const tooMany = Array.from({ length: reader.limits.pieces + 1 }, () => ({ type: "delta", text: "a" }));
    const read = reader.read(frame({ type: "pieces", pieces: tooMany }));
    expect(read.pieces).toHaveLength(reader.limits.pieces);
    expect(read.end).toEqual({ type: "fault", breach: { kind: "answer_bounds", why: "sent more than the 4 tokens max_tokens allows" } });
  });

  it("a receipt claiming more completion tokens than max_tokens is a fault even when it verifies", () => {
    const reader = new AnswerReader(expectations);
    const receipt = receiptFor("", { usage: { prompt_tokens: 1, completion_tokens: 5, total_tokens: 6 } });
    expect(reader.read(frame({ type: "done", receipt })).end).toMatchObject({ type: "fault", breach: { kind: "answer_bounds" } });
  });

  it("a frame that is no session frame, or a tool call out of order, is broken", () => {
    expect(new AnswerReader(expectations).read("not json").end).toMatchObject({ type: "fault", breach: { kind: "broken" } });
    const withTools = new AnswerReader({ ...expectations, body: { ...body, tools: [{ type: "function", function: { name: "f" } }] } });
    expect(withTools.read(frame({ type: "tool_args", index: 0, text: "{" })).end).toMatchObject({ type: "fault", breach: { kind: "broken" } });
  });

  it("an error frame is read as a report: svc's words, the provider's never", () => {
    const read = new AnswerReader(expectations).read(frame({ type: "error", code: "invalid_value", message: "visit evil.example", param: "temperature" }));
    expect(read.end).toMatchObject({ type: "report", report: { kind: "disputed", error: { code: "invalid_value", param: "temperature" } } });
    expect(JSON.stringify(read.end)).not.toContain("evil.example");
  });
});

describe("DESIGN §10 the bounds count bytes as node does, in any runtime", () => {
  it("utf8Length agrees with Buffer.byteLength on any UTF-16 string, lone surrogates included", () => {
    const unit = fc.nat(0xffff).map((c) => String.fromCharCode(c));
    fc.assert(fc.property(fc.oneof(fc.string({ unit }), fc.string({ unit: "grapheme" })), (text) => utf8Length(text) === Buffer.byteLength(text)));
  });
});
