// Embeddings on the agent (issue 31 item 2) on real llama.cpp: a tiny last-token-pooled qwen3 model run through
// node-llama-cpp's embedding context, sharing the engine's lock and its one loaded model with chat.
import { afterAll, describe, expect, it } from "vitest";
import { getLlama } from "node-llama-cpp";
import { Engine } from "../../../../agent/engine/engine.ts";
import { unitPrefix } from "../../../../agent/engine/embedder.ts";
import { ModelStore } from "../../../../agent/models/store.ts";
import { VerifiedFiles } from "../../../../agent/models/verified-files.ts";
import { vectorBase64, vectorFromBase64 } from "../../../../src/receipt/embedding-vectors.ts";
import { ApiError } from "../../../../src/errors.ts";
import { askEngine as ask, collect } from "../../../fixtures/engine-request.ts";
import { makeTinyCatalog } from "../../../fixtures/tiny-catalog.ts";

const tiny = makeTinyCatalog([
  { alias: "qwen3-4b", seed: 1 },
  { alias: "tiny-embed", seed: 3, kind: "embedding", matryoshka_min: 8 },
]);
const DIMS = 64;

describe("Engine.embed on the tiny embedding model", () => {
  const engine = new Engine({ store: new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir, verified: new VerifiedFiles() }), gpu: false, contextSize: 64 });
  const embed = (input: (string | number[])[], dimensions = DIMS) => engine.embed({ model: "tiny-embed", input, dimensions });
  const decode = (b64: string, dims = DIMS) => vectorFromBase64(b64, dims)!;

  afterAll(async () => {
    await engine.dispose();
    tiny.cleanup();
  });

  it("returns one unit vector per input, in order, the same for the same text, and counts every input's tokens", async () => {
    const result = await embed(["hello world", "other", "hello world"]);
    expect(result.vectors).toHaveLength(3);
    expect(result.model_sha256).toBe(tiny.files["tiny-embed"]!.sha256);
    // byte-level tokens, no specials added by this vocabulary: one token per character
    expect(result.prompt_tokens).toBe("hello world".length * 2 + "other".length);
    const [a, b, c] = result.vectors.map((v) => decode(v));
    expect(Math.hypot(...a!)).toBeCloseTo(1, 5);
    expect(c).toEqual(a);
    expect(b).not.toEqual(a);
  });

  it("is node-llama-cpp's own embedding of the text, scaled to unit length", async () => {
    const llama = await getLlama({ gpu: false });
    const model = await llama.loadModel({ modelPath: tiny.files["tiny-embed"]!.path });
    const context = await model.createEmbeddingContext({ contextSize: 64, threads: 1 });
    try {
      const { vector } = await context.getEmbeddingFor("hello world");
      expect((await embed(["hello world"])).vectors).toEqual([vectorBase64(unitPrefix(vector, DIMS))]);
    } finally {
      await context.dispose();
      await model.dispose();
    }
  });

  it("writes a zero as +0, never -0, so a float answer (JSON has no -0) verifies from its saved body", () => {
    const vector = unitPrefix([-0, 3, -0, -4], 4);
    expect([...vector].map((v) => Object.is(v, -0))).toEqual([false, false, false, false]);
    expect([...vector]).toEqual([0, 0.6000000238418579, 0, -0.800000011920929]);
    expect([...unitPrefix([-0, -0], 2)].map((v) => Object.is(v, -0))).toEqual([false, false]);
  });

  it("takes token ids as text's own tokens", async () => {
    // the tiny vocabulary's first 256 tokens are the bytes, in byte order (tiny-model/gguf.ts)
    const tokens = [...Buffer.from("hi")];
    const [fromText, fromTokens] = (await embed(["hi", tokens])).vectors;
    expect(fromTokens).toBe(fromText);
  });

  it("dimensions keeps the leading values and rescales them (Matryoshka)", async () => {
    const [full] = (await embed(["truncate me"])).vectors;
    const [short] = (await embed(["truncate me"], 8)).vectors;
    const head = decode(full!).slice(0, 8);
    const norm = Math.hypot(...head);
    decode(short!, 8).forEach((v, i) => expect(v).toBeCloseTo(head[i]! / norm, 6));
  });

  it("refuses a token id past the vocabulary and an input longer than the context, naming the input", async () => {
    const past = await embed(["ok", [1, 999_999]]).catch((e: unknown) => e);
    expect(past).toBeInstanceOf(ApiError);
    expect(past).toMatchObject({ code: "invalid_value", param: "input[1]" });
    const long = await embed(["x".repeat(100)]).catch((e: unknown) => e);
    expect(long).toMatchObject({ code: "context_length_exceeded", param: "input[0]" });
  });

  it("shares the one loaded model with chat: switching unloads the other", async () => {
    await embed(["a"]);
    expect(engine.loadedAlias).toBe("tiny-embed");
    const loads = engine.loads;
    await collect(engine.generate(ask({ max_tokens: 2 })));
    expect(engine.loadedAlias).toBe("qwen3-4b");
    await embed(["a"]);
    expect([engine.loadedAlias, engine.loads]).toEqual(["tiny-embed", loads + 2]);
  });
});

