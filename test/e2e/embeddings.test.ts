// POST /v1/embeddings (issue 31 item 2) against a real gateway and agent on a tiny last-token-pooled qwen3 model:
// the request as OpenAI defines it, routing and sealing as chat, a receipt over exactly the vectors returned, and
// the clients RAG stacks use (openai SDK, Vercel AI SDK through @ai-sdk/openai and @ai-sdk/openai-compatible,
// LangChain, LlamaIndex), unchanged.
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { OpenAIEmbeddings } from "@langchain/openai";
import { OpenAIEmbedding } from "@llamaindex/openai";
import { embed, embedMany } from "ai";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { embeddingsContent, vectorBase64 } from "../../src/receipt/embedding-vectors.ts";
import { verifyReceipt, type Receipt } from "../../src/receipt/receipt.ts";
import { sha256Hex } from "../../src/receipt/sha256.ts";
import { post, openaiGateway, type GatewayProcess } from "../fixtures/gateway.ts";

const DIMS = 64;
let gw: GatewayProcess;
let client: OpenAI;
beforeAll(async () => ({ gw, client } = await openaiGateway({
  aliases: [
    { alias: "qwen3-4b", seed: 1 },
    { alias: "tiny-embed", seed: 3, kind: "embedding", matryoshka_min: 8 },
    { alias: "tiny-embed-fixed", seed: 4, kind: "embedding" },
  ],
})));
afterAll(() => gw.stop());

const norm = (v: readonly number[]) => Math.hypot(...v);
/** The receipt verifies against the directory's key and covers exactly these vectors, in their canonical form. */
function expectReceiptCovers(receipt: Receipt, vectors: readonly (readonly number[])[]) {
  const verdict = verifyReceipt(receipt, { providerId: gw.providerId, content: embeddingsContent(vectors.map(vectorBase64)) });
  expect(verdict.problems).toEqual([]);
  expect(verdict.status).toBe("valid");
}

describe("POST /v1/embeddings: the openai SDK's embeddings.create", () => {
  it("float: one unit vector per input, in order, usage counting prompt tokens, and a receipt over the vectors", async () => {
    const res = await client.embeddings.create({ model: "tiny-embed", input: ["hello world", "other", "hello world"], encoding_format: "float" });
    expect(res.object).toBe("list");
    expect(res.model).toBe("tiny-embed");
    expect(res.data.map((d) => [d.object, d.index, d.embedding.length])).toEqual([["embedding", 0, DIMS], ["embedding", 1, DIMS], ["embedding", 2, DIMS]]);
    expect(norm(res.data[0]!.embedding)).toBeCloseTo(1, 5);
    expect(res.data[2]!.embedding).toEqual(res.data[0]!.embedding);
    expect(res.data[1]!.embedding).not.toEqual(res.data[0]!.embedding);
    // byte-level tokens: one per character
    expect(res.usage).toEqual({ prompt_tokens: 27, total_tokens: 27 });
    const receipt = (res as unknown as { svc_receipt: Receipt }).svc_receipt;
    expect(receipt).toMatchObject({ version: 3, cached_tokens: 0, model_id: "tiny-embed", finish_reason: "stop", usage: { prompt_tokens: 27, completion_tokens: 0, total_tokens: 27 } });
    expectReceiptCovers(receipt, res.data.map((d) => d.embedding));
  });

  it("the SDK's default (base64 on the wire) decodes to the same floats; the raw base64 is the receipt's canonical form", async () => {
    const viaSdk = await client.embeddings.create({ model: "tiny-embed", input: "hello world" });
    const float = await client.embeddings.create({ model: "tiny-embed", input: "hello world", encoding_format: "float" });
    expect(viaSdk.data[0]!.embedding).toEqual(float.data[0]!.embedding);
    const raw = await post(gw, "/v1/embeddings", { model: "tiny-embed", input: ["hello world"], encoding_format: "base64" });
    expect(raw.status).toBe(200);
    const body = (await raw.json()) as { data: { embedding: string }[]; svc_receipt: Receipt };
    expect(body.data[0]!.embedding).toBe(vectorBase64(float.data[0]!.embedding));
    expect(body.svc_receipt.response_sha256).toBe(sha256Hex(JSON.stringify([body.data[0]!.embedding])));
  });

  it("token arrays embed as the text they spell; dimensions shortens and rescales (Matryoshka)", async () => {
    const tokens = [...Buffer.from("hi")]; // the tiny vocabulary's first 256 ids are the bytes
    const res = await client.embeddings.create({ model: "tiny-embed", input: [tokens] as unknown as number[], encoding_format: "float" });
    const text = await client.embeddings.create({ model: "tiny-embed", input: "hi", encoding_format: "float" });
    expect(res.data[0]!.embedding).toEqual(text.data[0]!.embedding);
    const short = await client.embeddings.create({ model: "tiny-embed", input: "hi", dimensions: 8, encoding_format: "float" });
    expect(short.data[0]!.embedding).toHaveLength(8);
    expect(norm(short.data[0]!.embedding)).toBeCloseTo(1, 5);
    const head = text.data[0]!.embedding.slice(0, 8);
    short.data[0]!.embedding.forEach((v, i) => expect(v).toBeCloseTo(head[i]! / norm(head), 6));
    expectReceiptCovers((short as unknown as { svc_receipt: Receipt }).svc_receipt, short.data.map((d) => d.embedding));
  });

  it("routes like chat: a pin to the provider is honoured and named in the headers", async () => {
    const res = await post(gw, "/v1/embeddings", { model: "tiny-embed", input: "pinned", provider: gw.providerId.slice(0, 8) });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-svc-provider")).toBe(gw.providerId);
    expect(res.headers.get("x-svc-model")).toBe("tiny-embed");
  });
});

describe("POST /v1/embeddings: faults are 400s in the envelope, naming the field", () => {
  const cases: [string, Record<string, unknown>, number, string, string][] = [
    ["a chat model", { model: "qwen3-4b", input: "x" }, 400, "model_kind_mismatch", "model"],
    ["an unknown model", { model: "nope", input: "x" }, 404, "model_not_found", "model"],
    ["no model", { input: "x" }, 400, "missing_field", "model"],
    ["no input", { model: "tiny-embed" }, 400, "missing_field", "input"],
    ["an empty string", { model: "tiny-embed", input: "" }, 400, "invalid_value", "input"],
    ["an empty list", { model: "tiny-embed", input: [] }, 400, "invalid_value", "input"],
    ["a number", { model: "tiny-embed", input: 5 }, 400, "invalid_type", "input"],
    ["a negative token id", { model: "tiny-embed", input: [[1, -2]] }, 400, "invalid_value", "input[0][1]"],
    ["too many inputs", { model: "tiny-embed", input: Array(2049).fill("x") }, 400, "invalid_value", "input"],
    ["another encoding", { model: "tiny-embed", input: "x", encoding_format: "int8" }, 400, "invalid_value", "encoding_format"],
    ["dimensions where the model cannot shorten", { model: "tiny-embed-fixed", input: "x", dimensions: 8 }, 400, "unsupported_parameter", "dimensions"],
    ["dimensions below the Matryoshka floor", { model: "tiny-embed", input: "x", dimensions: 4 }, 400, "invalid_value", "dimensions"],
    ["dimensions past the model's length", { model: "tiny-embed", input: "x", dimensions: 65 }, 400, "invalid_value", "dimensions"],
    ["fractional dimensions", { model: "tiny-embed", input: "x", dimensions: 8.5 }, 400, "invalid_type", "dimensions"],
  ];
  it.each(cases)("%s", async (_name, body, status, code, param) => {
    const res = await post(gw, "/v1/embeddings", body);
    expect(res.status).toBe(status);
    expect((await res.json()) as unknown).toMatchObject({ error: { code, param } });
  });

  it("the provider's own refusals reach the caller by field: a token id past the vocabulary, an input past the context", async () => {
    const past = await post(gw, "/v1/embeddings", { model: "tiny-embed", input: [[1, 2], [1, 999_999]] });
    expect([past.status, ((await past.json()) as { error: { code: string; param: string } }).error]).toMatchObject([400, { code: "invalid_value", param: "input[1]" }]);
    const long = await post(gw, "/v1/embeddings", { model: "tiny-embed", input: ["short", "x".repeat(9000)] });
    expect([long.status, ((await long.json()) as { error: { code: string; param: string } }).error]).toMatchObject([400, { code: "context_length_exceeded", param: "input[1]" }]);
  });

  it("a chat request naming an embedding model is a 400 naming it", async () => {
    const err = await client.chat.completions.create({ model: "tiny-embed", messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).code).toBe("model_kind_mismatch");
  });
});

describe("POST /v1/embeddings: RAG clients, unchanged", () => {
  it("Vercel AI SDK embed and embedMany (@ai-sdk/openai-compatible)", async () => {
    const svc = createOpenAICompatible({ name: "svc", baseURL: gw.baseURL, apiKey: gw.key });
    const one = await embed({ model: svc.textEmbeddingModel("tiny-embed"), value: "hello world", maxRetries: 0 });
    expect(one.embedding).toHaveLength(DIMS);
    expect(one.usage.tokens).toBe(11);
    const many = await embedMany({ model: svc.textEmbeddingModel("tiny-embed"), values: ["hello world", "other"], maxRetries: 0 });
    expect(many.embeddings).toHaveLength(2);
    expect(many.embeddings[0]).toEqual(one.embedding);
  });

  it("Vercel AI SDK embed and embedMany through the default @ai-sdk/openai provider's embedding model, with dimensions", async () => {
    const openai = createOpenAI({ baseURL: gw.baseURL, apiKey: gw.key });
    const float = await client.embeddings.create({ model: "tiny-embed", input: "hello world", encoding_format: "float" });
    const one = await embed({ model: openai.embedding("tiny-embed"), value: "hello world", maxRetries: 0 });
    expect(one.embedding).toEqual(float.data[0]!.embedding);
    expect(one.usage.tokens).toBe(11);
    const many = await embedMany({ model: openai.textEmbeddingModel("tiny-embed"), values: ["hello world", "other"], maxRetries: 0 });
    expect(many.embeddings).toHaveLength(2);
    expect(many.embeddings[0]).toEqual(one.embedding);
    expect(many.embeddings[1]).toHaveLength(DIMS);
    const short = await embed({ model: openai.embedding("tiny-embed"), value: "hello world", maxRetries: 0, providerOptions: { openai: { dimensions: 8 } } });
    expect(short.embedding).toHaveLength(8);
    expect(norm(short.embedding)).toBeCloseTo(1, 5);
  });

  it("LangChain OpenAIEmbeddings: embedQuery and embedDocuments", async () => {
    const embeddings = new OpenAIEmbeddings({ model: "tiny-embed", apiKey: gw.key, configuration: { baseURL: gw.baseURL }, maxRetries: 0 });
    const query = await embeddings.embedQuery("hello world");
    const docs = await embeddings.embedDocuments(["hello world", "other"]);
    expect(query).toHaveLength(DIMS);
    expect(docs).toHaveLength(2);
    expect(docs[0]).toEqual(query);
  });

  it("LlamaIndex OpenAIEmbedding: getTextEmbedding and getTextEmbeddings, with dimensions", async () => {
    const embedding = new OpenAIEmbedding({ model: "tiny-embed", apiKey: gw.key, baseURL: gw.baseURL, maxRetries: 0 });
    const one = await embedding.getTextEmbedding("hello world");
    const many = await embedding.getTextEmbeddings(["hello world", "other"]);
    expect(one).toHaveLength(DIMS);
    expect(many).toHaveLength(2);
    expect(many[0]).toEqual(one);
    const short = new OpenAIEmbedding({ model: "tiny-embed", apiKey: gw.key, baseURL: gw.baseURL, maxRetries: 0, dimensions: 8 });
    expect(await short.getTextEmbedding("hello world")).toHaveLength(8);
  });
});
