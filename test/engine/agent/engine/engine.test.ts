// The agent's inference engine (issue: foundation) on real llama.cpp with the tiny qwen3 model.
import { appendFileSync, copyFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine } from "../../../../agent/engine/engine.ts";
import { planTurn } from "../../../../agent/engine/turn.ts";
import { defaultThreads } from "../../../../agent/daemon/machine.ts";
import { ModelFileError, ModelStore } from "../../../../agent/models/store.ts";
import { VerifiedFiles } from "../../../../agent/models/verified-files.ts";
import { ApiError } from "../../../../src/errors.ts";
import { askEngine as ask, collect, engineRequest } from "../../../fixtures/engine-request.ts";
import { makeTinyCatalog } from "../../../fixtures/tiny-catalog.ts";

const tiny = makeTinyCatalog([
  { alias: "qwen3-4b", seed: 1 },
  { alias: "qwen3-8b", seed: 2, endOfTurn: "sometimes" },
  { alias: "thinker", seed: 6, thinkTags: true },
]);
describe("Engine on the tiny qwen3 model", () => {
  const verified = new VerifiedFiles();
  const engine = new Engine({ store: new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir, verified }), gpu: false });

  afterAll(async () => {
    await engine.dispose();
    tiny.cleanup();
  });

  it("loads lazily: nothing is loaded until the first generation", async () => {
    expect(engine.loads).toBe(0);
    expect(engine.loadedAlias).toBeUndefined();
    await collect(engine.generate(ask({ max_tokens: 4 })));
    expect(engine.loads).toBe(1);
    expect(engine.loadedAlias).toBe("qwen3-4b");
  });

  it("streams real tokens as text deltas, then prompt_tokens, completion_tokens and finish_reason", async () => {
    const { text, deltas, done } = await collect(engine.generate(ask({ max_tokens: 40 })));
    expect(deltas.length).toBeGreaterThan(1);
    expect(text.length).toBeGreaterThan(0);
    expect(done).toMatchObject({ type: "done", completion_tokens: 40, finish_reason: "length" });
    expect(done.model_sha256).toBe(tiny.files["qwen3-4b"]?.sha256);
    // the tiny model only emits printable ASCII, one byte-level token per character
    expect(text).toMatch(/^[\x20-\x7e\n]*$/);
    expect(text.length).toBe(done.completion_tokens);
  });

  it("counts prompt tokens with the tokenizer over the chat-template rendering", async () => {
    const content = "count me";
    const { done } = await collect(engine.generate(ask({ messages: [{ role: "user", content }], max_tokens: 1 })));
    // "<|im_start|>user\n" + content + "<|im_end|>\n<|im_start|>assistant\n": specials are one token, bytes one each
    expect(done.prompt_tokens).toBe(1 + "user\n".length + content.length + 1 + 1 + 1 + "assistant\n".length);
    expect(engine.loads).toBe(1); // the loaded model is reused
  });

  it("honours max_tokens with finish_reason length", async () => {
    for (const max_tokens of [1, 7]) {
      const { done } = await collect(engine.generate(ask({ max_tokens })));
      expect(done.completion_tokens).toBe(max_tokens);
      expect(done.finish_reason).toBe("length");
    }
  });

  it("stops at the end-of-turn token with finish_reason stop", async () => {
    const { text, done } = await collect(engine.generate(ask({ model: "qwen3-8b", max_tokens: 512, seed: 42 })));
    expect(done.finish_reason).toBe("stop");
    expect(done.completion_tokens).toBeLessThan(512);
    expect(text).not.toContain("<|im_end|>");
  });

  it("passes Qwen3 <think>…</think> text through as content, one token per tag", async () => {
    const { text, done } = await collect(engine.generate(ask({ model: "thinker", max_tokens: 200, seed: 1 })));
    expect(text).toContain("<think>");
    const opens = text.split("<think>").length - 1;
    const closes = text.split("</think>").length - 1;
    // every other token is one printable character; each tag is one token
    const characters = text.length - opens * "<think>".length - closes * "</think>".length;
    expect(characters + opens + closes).toBe(done.completion_tokens);
  });

  it("is deterministic at temperature 0", async () => {
    const a = await collect(engine.generate(ask({ temperature: 0, max_tokens: 24 })));
    const b = await collect(engine.generate(ask({ temperature: 0, max_tokens: 24 })));
    expect(a.text).toBe(b.text);
  });

  it("aborting the signal stops generation within one token and frees the engine", async () => {
    const controller = new AbortController();
    let after = 0;
    let caught: unknown;
    try {
      for await (const event of engine.generate(ask({ max_tokens: 400 }), controller.signal)) {
        if (controller.signal.aborted) after++;
        if (event.type === "delta") controller.abort(new Error("caller hung up"));
      }
    } catch (err) {
      caught = err;
    }
    expect((caught as Error).message).toBe("caller hung up");
    expect(after).toBeLessThanOrEqual(1);
    // the next session runs at once and starts from an empty context
    const { done } = await collect(engine.generate(ask({ max_tokens: 3 })));
    expect(done.completion_tokens).toBe(3);
  });

  it("an aborted waiter leaves the queue without blocking the session behind it", async () => {
    const first = engine.generate(ask({ max_tokens: 30 }));
    const firstResult = collect(first);
    const controller = new AbortController();
    const second = collect(engine.generate(ask(), controller.signal));
    const third = collect(engine.generate(ask({ max_tokens: 2 })));
    controller.abort(new Error("gone"));
    await expect(second).rejects.toThrow("gone");
    expect((await firstResult).done.completion_tokens).toBe(30);
    expect((await third).done.completion_tokens).toBe(2);
  });

  it("refuses a prompt longer than the context with context_length_exceeded", async () => {
    const small = new Engine({ store: new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir }), gpu: false, contextSize: 64 });
    try {
      const err = await collect(small.generate(ask({ messages: [{ role: "user", content: "x".repeat(2000) }] }))).catch((e) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).code).toBe("context_length_exceeded");
    } finally {
      await small.dispose();
    }
  });

  it("refuses a max_tokens the context cannot hold after the prompt, naming the room; the room itself is served, and so is a request that sets none", async () => {
    const small = new Engine({ store: new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir }), gpu: false, contextSize: 64 });
    const refusal = async (max_tokens: number) => (await collect(small.generate(ask({ max_tokens }))).catch((e: unknown) => e)) as ApiError;
    try {
      const prompt = (await collect(small.generate(ask({ max_tokens: 1 })))).done.prompt_tokens;
      const err = await refusal(1_000_000);
      expect(err).toBeInstanceOf(ApiError);
      expect(err).toMatchObject({ code: "context_length_exceeded", param: "max_tokens", status: 400 });
      // llama.cpp may round the context up from the 64 asked for; the room is what is left of it after the prompt
      const [, room, context] = /room for at most (\d+) \((\d+) tokens of prompt and answer together\)/.exec(err.message)!.map(Number);
      expect(context).toBeGreaterThanOrEqual(64);
      expect(room).toBe(context! - prompt);
      expect(await refusal(room! + 1)).toMatchObject({ code: "context_length_exceeded", param: "max_tokens" });
      const { done } = await collect(small.generate(ask({ max_tokens: room! })));
      expect(done.completion_tokens).toBeLessThanOrEqual(room!);
      // a request that sets none is not refused: its default (512, more than this room) yields to the context
      const { max_tokens: _asked, ...unasked } = engineRequest();
      const filled = (await collect(small.generate(planTurn(unasked)))).done;
      expect(filled.completion_tokens).toBeLessThanOrEqual(room!);
    } finally {
      await small.dispose();
    }
  });

  it("runs a long answer to its budget on this machine's default thread count", async () => {
    // how fast is bench/engine-bench.ts's figure (tok/s at the default thread count), not a unit test's
    const { done } = await collect(engine.generate(ask({ max_tokens: 300 })));
    expect(engine.threads).toBe(defaultThreads());
    expect(done).toMatchObject({ completion_tokens: 300, finish_reason: "length" });
  });
});

describe("Engine refuses a file that does not match its pin", () => {
  let engine: Engine;
  const bad = makeTinyCatalog([{ alias: "qwen3-4b", seed: 3 }]);

  beforeAll(() => {
    // same size, different bytes: only the hash can tell
    const path = bad.files["qwen3-4b"]!.path;
    const other = makeTinyCatalog([{ alias: "qwen3-4b", seed: 4 }]);
    copyFileSync(other.files["qwen3-4b"]!.path, path);
    other.cleanup();
    engine = new Engine({ store: new ModelStore({ catalog: bad.catalog, modelsDir: bad.modelsDir }), gpu: false });
  });
  afterAll(async () => {
    await engine.dispose();
    bad.cleanup();
  });

  it("a wrong SHA-256 is refused with a clear error and the file is not loaded", async () => {
    const err = await collect(engine.generate(ask())).catch((e) => e);
    expect(err).toBeInstanceOf(ModelFileError);
    expect((err as Error).message).toMatch(/has sha256 [0-9a-f]{64} but the catalog pins [0-9a-f]{64}; refusing to load it/);
    expect(engine.loads).toBe(0);
  });

  it("a wrong size is refused before hashing", async () => {
    appendFileSync(bad.files["qwen3-4b"]!.path, Buffer.from([0]));
    const err = await collect(engine.generate(ask())).catch((e) => e);
    expect((err as Error).message).toMatch(/bytes but the catalog pins \d+; refusing to load it/);
    expect(engine.loads).toBe(0);
  });
});

describe("Engine keep-alive and verification cache", () => {
  it("unloads after the idle time and does not re-hash a verified file on reload", async () => {
    const t = makeTinyCatalog([{ alias: "qwen3-4b", seed: 5 }]);
    const verified = new VerifiedFiles(join(t.dir, "verified.json"));
    const lines: string[] = [];
    const engine = new Engine({
      store: new ModelStore({ catalog: t.catalog, modelsDir: t.modelsDir, verified }),
      gpu: false,
      keepAliveMs: 50,
      log: (l) => lines.push(l),
    });
    try {
      await collect(engine.generate(ask({ max_tokens: 2 })));
      await expect.poll(() => lines.some((l) => l.startsWith("unloaded qwen3-4b")), { timeout: 10_000, interval: 10 }).toBe(true);
      expect(engine.loadedAlias).toBeUndefined();
      await collect(engine.generate(ask({ max_tokens: 2 })));
      expect(engine.loads).toBe(2);
      expect(verified.hashCount).toBe(1);
      // a restarted agent reads the persisted cache and does not hash either
      const again = new VerifiedFiles(join(t.dir, "verified.json"));
      await new ModelStore({ catalog: t.catalog, modelsDir: t.modelsDir, verified: again }).verify("qwen3-4b");
      expect(again.hashCount).toBe(0);
    } finally {
      await engine.dispose();
      t.cleanup();
    }
  });
});
