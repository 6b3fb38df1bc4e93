// POST /v1/completions (issue 31 item 3), OpenAI's legacy completions, against a real gateway and agent on the
// tiny model: a raw prompt read without a chat template, whole or streamed, with the same receipts as chat.
import { OpenAI as LangChainOpenAI } from "@langchain/openai";
import OpenAI from "openai";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../harness/cli.ts";
import { verifyReceipt, type Receipt } from "../../src/receipt/receipt.ts";
import { post, openaiGateway, type GatewayProcess } from "../fixtures/gateway.ts";

let gw: GatewayProcess;
let client: OpenAI;
beforeAll(async () => ({ gw, client } = await openaiGateway({ aliases: [{ alias: "qwen3-4b", seed: 1 }, { alias: "tiny-embed", seed: 3, kind: "embedding" }] })));
afterAll(() => gw.stop());

const receiptOf = (value: unknown) => (value as { svc_receipt: Receipt }).svc_receipt;

describe("POST /v1/completions: the openai SDK's completions.create", () => {
  it("reads the prompt as raw text (no chat template), answers 16 tokens by default, and its receipt covers the text", async () => {
    const prompt = "Once upon a time";
    const res = await client.completions.create({ model: "qwen3-4b", prompt, temperature: 0 });
    expect(res.object).toBe("text_completion");
    expect(res.model).toBe("qwen3-4b");
    const [first] = res.choices;
    expect(first).toMatchObject({ index: 0, logprobs: null, finish_reason: "length" });
    // the tiny vocabulary has one token per byte and no merges: a raw prompt is exactly its length
    expect(res.usage).toEqual({ prompt_tokens: prompt.length, completion_tokens: 16, total_tokens: prompt.length + 16, prompt_tokens_details: { cached_tokens: 0 } });
    const verdict = verifyReceipt(receiptOf(res), { providerId: gw.providerId, content: first!.text, version: 3, usage: res.usage, finishReason: "length" });
    expect(verdict.problems).toEqual([]);
    expect(verdict.status).toBe("valid");
  });

  it("a list of one prompt is that prompt; special tokens in it are read as such; seed repeats the text", async () => {
    const one = await client.completions.create({ model: "qwen3-4b", prompt: "<|im_start|>hi", max_tokens: 5, temperature: 1, seed: 7 });
    const again = await client.completions.create({ model: "qwen3-4b", prompt: ["<|im_start|>hi"], max_tokens: 5, temperature: 1, seed: 7 });
    expect(one.usage?.prompt_tokens).toBe(3);
    expect(again.choices[0]!.text).toBe(one.choices[0]!.text);
  });

  it("streams text_completion chunks; the last carries usage and the receipt over the joined text", async () => {
    const stream = await client.completions.create({ model: "qwen3-4b", prompt: "abc", max_tokens: 6, stream: true });
    let text = "";
    let last: OpenAI.Completion | undefined;
    for await (const chunk of stream) {
      expect(chunk.object).toBe("text_completion");
      text += chunk.choices[0]?.text ?? "";
      last = chunk;
    }
    expect(last?.choices[0]?.finish_reason).toBe("length");
    expect(last?.usage).toEqual({ prompt_tokens: 3, completion_tokens: 6, total_tokens: 9, prompt_tokens_details: { cached_tokens: 0 } });
    expect(verifyReceipt(receiptOf(last), { providerId: gw.providerId, content: text }).status).toBe("valid");
  });

  it("stop ends the text before the stop sequence", async () => {
    const free = await client.completions.create({ model: "qwen3-4b", prompt: "x", max_tokens: 30, temperature: 0 });
    const cut = free.choices[0]!.text.slice(3, 5);
    const stopped = await client.completions.create({ model: "qwen3-4b", prompt: "x", max_tokens: 30, temperature: 0, stop: cut });
    expect(stopped.choices[0]!.text).toBe(free.choices[0]!.text.slice(0, free.choices[0]!.text.indexOf(cut)));
    expect(stopped.choices[0]!.finish_reason).toBe("stop");
  });

  it("logit_bias is honoured: a strong bias on one byte token makes it the whole answer", async () => {
    const res = await client.completions.create({ model: "qwen3-4b", prompt: "x", max_tokens: 4, logit_bias: { [String("z".charCodeAt(0))]: 100 } });
    expect(res.choices[0]!.text).toBe("zzzz");
  });

  it("LangChain's OpenAI (completions) model invokes it unchanged", async () => {
    const llm = new LangChainOpenAI({ model: "qwen3-4b", apiKey: gw.key, configuration: { baseURL: gw.baseURL }, maxTokens: 4, maxRetries: 0 });
    expect(typeof (await llm.invoke("Hello"))).toBe("string");
  });
});

// the gateway of this file serves an embedding model too, so saved embeddings are checked here as well
describe("svc-agent verify re-checks a saved legacy answer, and a saved embeddings answer", () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-legacy-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const save = async (name: string, path: string, body: Record<string, unknown>) => {
    const res = await post(gw, path, body);
    expect(res.status).toBe(200);
    writeFileSync(join(dir, name), await res.text());
    return join(dir, name);
  };
  const verify = (path: string) => runCli("svc-agent", ["verify", path, "--providers", gw.url, "--api-key", gw.key]);
  const legacy = { model: "qwen3-4b", prompt: "Once upon a time", max_tokens: 8, temperature: 1, seed: 3 };
  const embeddings = { model: "tiny-embed", input: ["red", "green"] };

  it("a body and a stream of /v1/completions, and float and base64 bodies of /v1/embeddings, are VALID", async () => {
    const saved = [
      [await save("legacy.json", "/v1/completions", legacy), "a legacy completions response"],
      [await save("legacy.sse", "/v1/completions", { ...legacy, stream: true }), "a legacy completions SSE transcript"],
      [await save("float.json", "/v1/embeddings", embeddings), "an embeddings response"],
      [await save("base64.json", "/v1/embeddings", { ...embeddings, encoding_format: "base64" }), "an embeddings response"],
    ] as const;
    for (const [path, kind] of saved) {
      const result = await verify(path);
      expect(result.code, result.stdout + result.stderr).toBe(0);
      expect(result.stdout).toContain(kind);
      expect(result.stdout.trimEnd().split("\n").at(-1)).toMatch(/^VALID/);
    }
  });

  it("a text or a vector changed after the fact is INVALID, naming response_sha256", async () => {
    const body = JSON.parse(readFileSync(join(dir, "legacy.json"), "utf8")) as { choices: [{ text: string }] };
    body.choices[0].text += "!";
    writeFileSync(join(dir, "legacy-edited.json"), JSON.stringify(body));
    const vectors = JSON.parse(readFileSync(join(dir, "float.json"), "utf8")) as { data: { embedding: number[] }[] };
    vectors.data[1]!.embedding[0] = Math.fround(vectors.data[1]!.embedding[0]! / 2);
    writeFileSync(join(dir, "float-edited.json"), JSON.stringify(vectors));
    for (const name of ["legacy-edited.json", "float-edited.json"]) {
      const result = await verify(join(dir, name));
      expect(result.code, result.stdout).toBe(1);
      expect(result.stdout).toMatch(/FAIL .*response_sha256/);
    }
  });
});

describe("POST /v1/completions: faults are 400s naming the field", () => {
  const cases: [string, Record<string, unknown>, string, string][] = [
    ["two prompts", { model: "qwen3-4b", prompt: ["a", "b"] }, "invalid_value", "prompt"],
    ["no prompt", { model: "qwen3-4b" }, "missing_field", "prompt"],
    ["an embedding model", { model: "tiny-embed", prompt: "a" }, "model_kind_mismatch", "model"],
    ["n: 2", { model: "qwen3-4b", prompt: "a", n: 2 }, "unsupported_parameter", "n"],
    ["echo: true", { model: "qwen3-4b", prompt: "a", echo: true }, "unsupported_parameter", "echo"],
    ["a suffix", { model: "qwen3-4b", prompt: "a", suffix: "z" }, "unsupported_parameter", "suffix"],
    ["fractional max_tokens", { model: "qwen3-4b", prompt: "a", max_tokens: 1.5 }, "invalid_type", "max_tokens"],
  ];
  it.each(cases)("%s", async (_name, body, code, param) => {
    const res = await post(gw, "/v1/completions", body);
    expect(res.status).toBe(400);
    expect((await res.json()) as unknown).toMatchObject({ error: { code, param } });
  });
});
