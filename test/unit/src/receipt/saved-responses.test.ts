// RECEIPTS.md "Responses": a saved Responses answer (the body, or its event stream) is read strictly, its items
// give back exactly the content, calls and reasoning the receipt signs, and any change to them is INVALID.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { AnswerPiece } from "../../../../src/receipt/answer-record.ts";
import { readSavedResponse, verifySavedResponse } from "../../../../src/receipt/saved-response.ts";
import { savedResponsesAnswer, trustedKey } from "../../../fixtures/saved-answer.ts";

const PIECES: AnswerPiece[] = [
  { type: "reasoning", text: "think" },
  { type: "delta", text: "Checking." },
  { type: "tool_call", index: 0, id: "call_a", name: "get_weather" },
  { type: "tool_args", index: 0, text: '{"city":' },
  { type: "tool_args", index: 0, text: '"Paris"}' },
];
const { receipt, body: savedBody, events: savedEvents, sse } = savedResponsesAnswer(PIECES);
const stream = () => ({ body: structuredClone(savedBody), events: structuredClone(savedEvents) });
const answer = { content: "Checking.", toolCalls: [{ id: "call_a", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }], reasoning: "think", finishReason: "tool_calls" };

describe("RECEIPTS.md Responses: a saved answer", () => {
  it("a body: its items read back as the signed answer, and the receipt is valid", () => {
    const { body } = stream();
    expect(readSavedResponse(JSON.stringify(body))).toMatchObject({ kind: "responses", receipt, ...answer, problems: [] });
    expect(verifySavedResponse(JSON.stringify(body), trustedKey)).toMatchObject({ status: "valid", problems: [] });
    // what the openai SDK adds when it saves one
    expect(verifySavedResponse(JSON.stringify({ ...body, output_text: "Checking." }), trustedKey).status).toBe("valid");
  });

  it("a stream: the deltas build the final response's items, and the receipt is valid", () => {
    const { events } = stream();
    expect(readSavedResponse(sse(events))).toMatchObject({ kind: "responses-stream", receipt, ...answer, problems: [] });
    expect(verifySavedResponse(sse(events), trustedKey).status).toBe("valid");
  });

  it("a changed item, a re-laid output or a broken stream is INVALID", () => {
    const { body, events } = stream();
    const output = body.output as Record<string, unknown>[];
    const edits: [string, unknown][] = [
      ["call arguments", { ...body, output: output.map((i) => (i.type === "function_call" ? { ...i, arguments: '{"city":"Lyon"}' } : i)) }],
      ["an extra field", { ...body, output: output.map((i) => ({ ...i, extra: 1 })) }],
      ["two messages", { ...body, output: [output[0], output[1], output[1], output[2]] }],
      ["output_text", { ...body, output_text: "Checking!" }],
      ["status", { ...body, status: "incomplete", incomplete_details: { reason: "max_output_tokens" } }],
      ["usage", { ...body, usage: { ...(body.usage as object), output_tokens_details: { reasoning_tokens: 3 } } }],
    ];
    for (const [what, edited] of edits) expect([what, verifySavedResponse(JSON.stringify(edited), trustedKey).status]).toEqual([what, "invalid"]);
    const delta = events.findIndex((e) => e.type === "response.output_text.delta");
    const streams: [string, unknown[]][] = [
      ["a changed delta", events.map((e, i) => (i === delta ? { ...e, delta: "Nope." } : e))],
      ["a skipped number", events.map((e, i) => (i === delta ? { ...e, sequence_number: 99 } : e))],
      ["cut before the end", events.slice(0, -1)],
      ["failed", [...events.slice(0, 3), { type: "error", sequence_number: 3, code: "provider_error", message: "gone" }]],
    ];
    for (const [what, edited] of streams) expect([what, verifySavedResponse(sse(edited), trustedKey).status]).toEqual([what, "invalid"]);
  });

  it("the vector in RECEIPTS.md reads back as the v2 vector's answer and is valid under its key", () => {
    const doc = readFileSync(new URL("../../../../RECEIPTS.md", import.meta.url), "utf8");
    const block = /### A Responses vector[\s\S]*?```json\n([\s\S]*?)\n```/.exec(doc)![1]!;
    const vectors = /## Test vectors[\s\S]*?```json\n([\s\S]*?)\n```/.exec(doc)![1]!;
    const v2 = (JSON.parse(vectors) as { vectors: { name: string; content: string; tool_calls: unknown[]; reasoning: string; receipt: { signing_key: string } }[] }).vectors.find((v) => v.name === "v2: a tool call with reasoning apart")!;
    expect(readSavedResponse(block)).toMatchObject({ kind: "responses", content: v2.content, toolCalls: v2.tool_calls, reasoning: v2.reasoning, problems: [] });
    expect(verifySavedResponse(block, { signingKey: v2.receipt.signing_key })).toMatchObject({ status: "valid", problems: [] });
    const swapped = JSON.parse(block) as { output: unknown[] };
    swapped.output.reverse();
    expect(verifySavedResponse(JSON.stringify(swapped), { signingKey: v2.receipt.signing_key }).status).toBe("invalid");
  });
});
