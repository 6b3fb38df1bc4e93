// RECEIPTS.md "Legacy completions" and "Embeddings": a saved answer of POST /v1/completions (the body, or its SSE
// transcript) and of POST /v1/embeddings (float or base64) is read strictly, gives back exactly what the receipt
// signs, and any change to it is INVALID.
import { describe, expect, it } from "vitest";
import { readSavedResponse, verifySavedResponse } from "../../../../src/receipt/saved-response.ts";
import { savedEmbeddingsBody, savedLegacyAnswer, transcriptOf, trustedKey, type SavedEvent } from "../../../fixtures/saved-answer.ts";

const json = (value: unknown) => JSON.stringify(value);

describe("RECEIPTS.md Legacy completions: a saved answer", () => {
  const { receipt, body, events } = savedLegacyAnswer(["Once ", "upon ", "a time"]);

  it("a body: choices[0].text is the content the receipt covers, and the receipt is valid", () => {
    expect(readSavedResponse(json(body))).toMatchObject({ kind: "completion", receipt, content: "Once upon a time", toolCalls: [], reasoning: null, finishReason: "stop", problems: [] });
    expect(verifySavedResponse(json(body), trustedKey)).toMatchObject({ status: "valid", problems: [] });
  });

  it("a stream: the texts joined are the content, the last chunk carries the receipt, and it is valid", () => {
    expect(readSavedResponse(transcriptOf(events))).toMatchObject({ kind: "completion-stream", receipt, content: "Once upon a time", finishReason: "stop", problems: [] });
    expect(verifySavedResponse(transcriptOf(events), trustedKey)).toMatchObject({ status: "valid", problems: [] });
  });

  it("a changed text, usage or finish reason, an extra field, or a broken stream is INVALID", () => {
    const choice = (body.choices as Record<string, unknown>[])[0]!;
    const bodies: [string, unknown][] = [
      ["text", { ...body, choices: [{ ...choice, text: "Once upon a tide" }] }],
      ["finish_reason", { ...body, choices: [{ ...choice, finish_reason: "length" }] }],
      ["usage", { ...body, usage: { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9, prompt_tokens_details: { cached_tokens: 0 } } }],
      ["an extra field", { ...body, choices: [{ ...choice, extra: 1 }] }],
      ["two choices", { ...body, choices: [choice, { ...choice, index: 1 }] }],
      ["no receipt", { ...body, svc_receipt: undefined }],
    ];
    for (const [what, edited] of bodies) expect(verifySavedResponse(json(edited), trustedKey).status, what).toBe("invalid");
    const [a, b, c, stop, done] = events as Exclude<SavedEvent, "[DONE]">[];
    const streams: [string, SavedEvent[]][] = [
      ["a text dropped", [a!, c!, stop!, done!]],
      ["a text changed", [a!, { ...b!, choices: [{ text: "down ", index: 0, logprobs: null, finish_reason: null }] }, c!, stop!, done!]],
      ["no [DONE]", [a!, b!, c!, stop!]],
      ["a chunk after the receipt", [a!, b!, stop!, c!, done!]],
      ["another id", [a!, { ...b!, id: "cmpl-other" }, c!, stop!, done!]],
      ["a verdict field not the receipt's", [a!, b!, c!, { ...stop!, x_svc_trust: "hardware" }, done!]],
      ["usage before the last chunk", [a!, { ...b!, usage: stop!.usage }, c!, stop!, done!]],
      ["an error event", [a!, b!, { error: { code: "provider_error", message: "gone" } }]],
    ];
    for (const [what, list] of streams) expect(verifySavedResponse(transcriptOf(list), trustedKey).status, what).toBe("invalid");
  });
});

describe("RECEIPTS.md Embeddings: a saved answer", () => {
  const vectors = [[0.5, -0.25, 1], [0, 1, -1]];

  it("float and base64 answers both give back the canonical form the receipt covers (the RECEIPTS.md vector)", () => {
    for (const encoding of ["float", "base64"] as const) {
      const { receipt, body } = savedEmbeddingsBody(vectors, encoding);
      expect(receipt.response_sha256).toBe("4c43797eb212d1dac3cdb66e597857e0260f0b21c6de7ce77b088a5b2ef38056");
      expect(readSavedResponse(json(body)), encoding).toMatchObject({ kind: "embeddings", content: '["AAAAPwAAgL4AAIA/","AAAAAAAAgD8AAIC/"]', finishReason: "stop", problems: [] });
      expect(verifySavedResponse(json(body), trustedKey), encoding).toMatchObject({ status: "valid", problems: [] });
    }
  });

  it("a changed number, a number that is not a float32, vectors reordered, mixed or of two lengths, or changed usage is INVALID", () => {
    const float = savedEmbeddingsBody(vectors, "float").body;
    const base64 = savedEmbeddingsBody(vectors, "base64").body;
    const data = (body: Record<string, unknown>) => body.data as { object: string; index: number; embedding: number[] | string }[];
    const withData = (body: Record<string, unknown>, edit: (d: ReturnType<typeof data>) => unknown) => ({ ...body, data: edit(structuredClone(data(body))) });
    const edits: [string, unknown][] = [
      ["a number", withData(float, (d) => ((d[0]!.embedding as number[])[0] = 0.75, d))],
      ["not a float32", withData(float, (d) => ((d[0]!.embedding as number[])[0] = 0.5000000001, d))],
      ["reordered", withData(float, (d) => [d[1], d[0]])],
      ["indexes swapped", withData(float, (d) => [{ ...d[0], index: 1 }, { ...d[1], index: 0 }])],
      ["mixed encodings", withData(float, (d) => [d[0], data(base64)[1]])],
      ["two lengths", withData(float, (d) => [d[0], { ...d[1], embedding: [0, 1] }])],
      ["a vector dropped", withData(base64, (d) => [d[0]])],
      ["base64 not canonical", withData(base64, (d) => [{ ...d[0], embedding: "AAAAPwAAgL4AAIA_" }, d[1]])],
      ["usage", { ...float, usage: { prompt_tokens: 7, total_tokens: 7 } }],
      ["an extra field", { ...float, extra: 1 }],
    ];
    for (const [what, edited] of edits) expect(verifySavedResponse(json(edited), trustedKey).status, what).toBe("invalid");
  });
});
