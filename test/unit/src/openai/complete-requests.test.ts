// Complete requests (issue 43 item 2, `svc-gateway serve --audit`): every chat, Responses and legacy request seals
// top_logprobs and a seed, so every receipt commits to every token's logprob and an audit, which needs them, is not
// marked by asking; the answer shows logprobs only to a caller who asked, and what it saves still verifies.
import { describe, expect, it } from "vitest";
import { Signer } from "../../../../src/crypto/signing.ts";
import { shaperOf, type SseEvent } from "../../../../src/openai/answer-shaper.ts";
import { parseRoute, type RouteRequest } from "../../../../src/openai/route-request.ts";
import type { RouteKind } from "../../../../src/openai/route-kinds.ts";
import { AnswerRecord, type AnswerPiece } from "../../../../src/receipt/answer-record.ts";
import { logprobsSha256, tokenString, type TokenLogprob } from "../../../../src/receipt/logprobs.ts";
import { RECEIPT_VERSION_LOGPROBS, signReceipt, type Receipt, type ReceiptPayload } from "../../../../src/receipt/receipt.ts";
import { verifySavedResponse } from "../../../../src/receipt/saved-response.ts";
import { nodeSha256Hex } from "../../../../src/crypto/sha256-node.ts";
import { SessionPlaintextSchema } from "../../../../src/session/sealed-request.ts";
import { logprobTokenCap } from "../../../../src/session/logprobs.ts";
import { catchApiError } from "../../../fixtures/api-error.ts";
import { CATALOG, NONCE } from "../../../fixtures/chat-request.ts";
import { receiptPayload } from "../../../fixtures/receipt-payload.ts";

const SEED = 4_000_000_001;
const complete = { seed: SEED };
const route = (kind: RouteKind, body: unknown, completing = true): RouteRequest =>
  parseRoute(kind, body, { catalog: CATALOG, nonce: NONCE, ...(completing ? { complete } : {}) });
const sealed = (kind: RouteKind, body: unknown, completing = true) => route(kind, body, completing).body as Record<string, unknown>;

const chat = { model: "qwen3-4b", messages: [{ role: "user", content: "hi" }] };
const legacy = { model: "qwen3-4b", prompt: "hi" };
const responses = { model: "qwen3-4b", input: "hi" };
const INCLUDE = ["message.output_text.logprobs"];

describe("Complete requests: what is sealed", () => {
  it("a request that asks for neither seals top_logprobs 0 and the gateway's seed, on every route; not shown", () => {
    for (const [kind, body] of [["chat", chat], ["completions", legacy], ["responses", responses]] as const) {
      const request = route(kind, body);
      expect([kind, request.body.top_logprobs, request.body.seed, request.kind !== "embeddings" && request.logprobs]).toEqual([kind, 0, SEED, false]);
      // what the agent's own check of the plaintext accepts
      expect(SessionPlaintextSchema.safeParse(request.body).success).toBe(true);
    }
  });

  it("the caller's logprobs and seed are sealed as sent, and shown", () => {
    expect(route("chat", { ...chat, logprobs: true, top_logprobs: 3, seed: 7 })).toMatchObject({ body: { top_logprobs: 3, seed: 7 }, logprobs: true });
    expect(route("completions", { ...legacy, logprobs: 2, seed: 0 })).toMatchObject({ body: { top_logprobs: 2, seed: 0 }, logprobs: true });
    expect(route("responses", { ...responses, include: INCLUDE, top_logprobs: 4 })).toMatchObject({ body: { top_logprobs: 4, seed: SEED }, logprobs: true });
  });

  it("what asks for no logprobs is sealed as 0 and not shown: chat's logprobs false, Responses' top_logprobs without include", () => {
    expect(route("chat", { ...chat, logprobs: false })).toMatchObject({ body: { top_logprobs: 0 }, logprobs: false });
    expect(route("responses", { ...responses, top_logprobs: 5 })).toMatchObject({ body: { top_logprobs: 0 }, logprobs: false });
  });

  it("a seed of -1 (llama-server's random) is sealed as the gateway's fresh seed: the same request, a seed the receipt names", () => {
    expect(sealed("chat", { ...chat, seed: -1 }).seed).toBe(SEED);
  });

  it("without --audit nothing is added: a plain request seals neither field, and logprobs only when asked", () => {
    for (const [kind, body] of [["chat", chat], ["completions", legacy], ["responses", responses]] as const) {
      const body_ = sealed(kind, body, false);
      expect(["top_logprobs" in body_, "seed" in body_]).toEqual([false, false]);
    }
    expect(sealed("chat", { ...chat, logprobs: true }, false).top_logprobs).toBe(0);
  });

  it("a max_tokens past one answer's logprobs is not refused for logprobs the caller never asked for; it is sealed without them", () => {
    const long = logprobTokenCap(0) + 1;
    expect("top_logprobs" in sealed("chat", { ...chat, max_tokens: long })).toBe(false);
    expect(catchApiError(() => route("chat", { ...chat, max_tokens: long, logprobs: true })).param).toBe("max_tokens");
  });
});

const signer = Signer.fromSeed(new Uint8Array(32).fill(9));
const entry = (text: string, logprob: number): TokenLogprob => {
  const bytes = [...Buffer.from(text)];
  return { id: bytes[0]!, token: tokenString(bytes), bytes, logprob, top_logprobs: [] };
};
const ENTRIES = [entry("He", -0.25), entry("llo", -1.5)];
const PIECES: AnswerPiece[] = [
  { type: "logprobs", logprobs: [ENTRIES[0]!] },
  { type: "delta", text: "He" },
  { type: "logprobs", logprobs: [ENTRIES[1]!] },
  { type: "delta", text: "llo" },
];

/** The answer and the v4 receipt an honest provider signs for a complete request. */
function answered(request: RouteRequest): { answer: AnswerRecord; receipt: Receipt } {
  const answer = new AnswerRecord();
  for (const piece of PIECES) answer.add(piece);
  const payload = receiptPayload(signer, answer.content, {
    version: RECEIPT_VERSION_LOGPROBS,
    usage: { prompt_tokens: 7, completion_tokens: ENTRIES.length, total_tokens: 7 + ENTRIES.length },
    tool_calls_sha256: null,
    reasoning_sha256: null,
    cached_tokens: 0,
    logprobs_sha256: logprobsSha256(answer.logprobs),
    content_logprobs_sha256: logprobsSha256(answer.contentLogprobs),
    gateway_nonce: request.body.nonce,
    request_sha256: nodeSha256Hex("request"),
  } as Partial<ReceiptPayload>);
  return { answer, receipt: signReceipt(signer, payload) };
}

const transcript = (events: SseEvent[], done: boolean) =>
  events.map((e) => `${e.event === undefined ? "" : `event: ${e.event}\n`}data: ${JSON.stringify(e.data)}\n\n`).join("") + (done ? "data: [DONE]\n\n" : "");

function streamOf(request: RouteRequest, receipt: Receipt): string {
  const stream = shaperOf(request).stream!;
  const events = [...stream.opening(), ...PIECES.flatMap((p) => stream.piece(p))];
  const end = stream.closing(receipt);
  return transcript([...events, ...end.events], end.done);
}

const trusted = { signingKey: signer.publicKey };
const NOT_SHOWN = "logprobs committed, not shown";

describe("Complete requests: shown only to who asked, and what is saved verifies", () => {
  it.each([["chat", chat], ["completions", legacy], ["responses", responses]] as const)("%s without logprobs: none in the body or the stream; both verify VALID, committed, not shown", (kind, body) => {
    const request = route(kind, body);
    const { answer, receipt } = answered(request);
    const whole = JSON.stringify(shaperOf(request).whole(answer, receipt));
    const stream = streamOf(request, receipt);
    for (const text of [whole, stream]) {
      expect(text).not.toContain('"logprob"');
      const verdict = verifySavedResponse(text, trusted);
      expect(verdict.problems).toEqual([]);
      expect(verdict.status).toBe("valid");
      expect(verdict.checks.filter((c) => c.check === "logprobs").map((c) => c.detail.slice(0, NOT_SHOWN.length))).toEqual([NOT_SHOWN]);
    }
    if (kind !== "responses") expect(JSON.parse(whole).choices[0].logprobs ?? null).toBeNull();
  });

  it.each([["chat", { ...chat, logprobs: true }], ["completions", { ...legacy, logprobs: 0 }], ["responses", { ...responses, include: INCLUDE }]] as const)("%s with logprobs asked: shown, checked against the receipt, and a changed one is INVALID", (_kind, body) => {
    const request = route(_kind, body);
    const { answer, receipt } = answered(request);
    const whole = JSON.stringify(shaperOf(request).whole(answer, receipt));
    for (const text of [whole, streamOf(request, receipt)]) {
      expect(text).toContain('"logprob":-1.5');
      const verdict = verifySavedResponse(text, trusted);
      expect(verdict.status).toBe("valid");
      expect(verdict.checks.some((c) => c.detail.startsWith(NOT_SHOWN))).toBe(false);
      expect(verifySavedResponse(text.replaceAll('"logprob":-1.5', '"logprob":-1.25'), trusted).status).toBe("invalid");
    }
  });
});
