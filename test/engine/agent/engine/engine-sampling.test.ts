// SPEC §2.1's sampling controls applied by the agent's engine on real llama.cpp with the tiny qwen3 model.
// Its weights are random, so these check mechanics (same seed same text, a stop ends before itself, a bias
// forces a token), never what the text says.
import { afterAll, describe, expect, it } from "vitest";
import { Engine } from "../../../../agent/engine/engine.ts";
import type { GenerateRequest, Turn } from "../../../../agent/engine/turn.ts";
import { ModelStore } from "../../../../agent/models/store.ts";
import { ApiError } from "../../../../src/errors.ts";
import { askEngine, collect } from "../../../fixtures/engine-request.ts";
import { makeTinyCatalog } from "../../../fixtures/tiny-catalog.ts";

// the tiny model's vocabulary: token b < 256 is the byte b, then the Qwen specials
const token = (char: string) => char.charCodeAt(0);
const IM_END = 258;

const tiny = makeTinyCatalog([{ alias: "qwen3-4b", seed: 1 }]);
const engine = new Engine({ store: new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir }), gpu: false, threads: 1 });
afterAll(async () => {
  await engine.dispose();
  tiny.cleanup();
});

const ask = (overrides: Partial<GenerateRequest> = {}) => askEngine({ max_tokens: 40, temperature: 0.8, ...overrides });
const generate = (turn: Turn) => collect(engine.generate(turn));

describe("§2.1 seed", () => {
  it("the same seed gives the same text at temperature 0.8; another seed another text", async () => {
    const a = await generate(ask({ seed: 42 }));
    const b = await generate(ask({ seed: 42 }));
    const c = await generate(ask({ seed: 43 }));
    expect(a.text).toHaveLength(40);
    expect(b.text).toBe(a.text);
    expect(c.text).not.toBe(a.text);
  });

  it("without a seed each request draws its own (node-llama-cpp alone would reuse the clock's second)", async () => {
    const texts = new Set<string>();
    for (let i = 0; i < 3; i++) texts.add((await generate(ask())).text);
    expect(texts.size).toBeGreaterThan(1);
  });
});

describe("§2.1 stop", () => {
  it("ends before the stop text, which is not returned, with finish_reason stop; its tokens are counted", async () => {
    const reference = await generate(ask({ temperature: 0, seed: 1 }));
    expect(reference.done.finish_reason).toBe("length");
    const stop = reference.text.slice(15, 18); // three one-character tokens: the stop spans token boundaries
    const at = reference.text.indexOf(stop);
    const cut = await generate(ask({ temperature: 0, seed: 1, stop: [stop] }));
    expect(cut.text).toBe(reference.text.slice(0, at));
    expect(cut.done.finish_reason).toBe("stop");
    // every character of the tiny model is one token: what was returned plus the stop's own tokens
    expect(cut.done.completion_tokens).toBe(at + stop.length);
    // the deltas never carried any of it: they join to exactly the text before the stop
    expect(cut.deltas.join("")).toBe(reference.text.slice(0, at));
  });

  it("the first of several stops to complete wins; a stop that never appears changes nothing", async () => {
    const reference = await generate(ask({ temperature: 0 }));
    const early = reference.text.slice(5, 7);
    const late = reference.text.slice(20, 24);
    // the one whose last character comes first, cut where it begins
    const [first] = [early, late]
      .map((stop) => ({ at: reference.text.indexOf(stop), end: reference.text.indexOf(stop) + stop.length }))
      .sort((a, b) => a.end - b.end || a.at - b.at);
    expect((await generate(ask({ temperature: 0, stop: [late, early] }))).text).toBe(reference.text.slice(0, first!.at));
    const never = await generate(ask({ temperature: 0, stop: ["\u00e9t\u00e9"] })); // the tiny model writes ASCII only
    expect([never.text, never.done.finish_reason]).toEqual([reference.text, "length"]);
  });
});

describe("§2.1 top_p, top_k, min_p", () => {
  it("top_k 1, top_p 0 and min_p 1 each leave only the likeliest token: the greedy text, even at temperature 1.5", async () => {
    const greedy = (await generate(ask({ temperature: 0 }))).text;
    for (const only of [{ top_k: 1 }, { top_p: 0 }, { min_p: 1 }]) {
      expect((await generate(ask({ temperature: 1.5, seed: 3, ...only }))).text, JSON.stringify(only)).toBe(greedy);
    }
    // and the same seed without them samples something else
    expect((await generate(ask({ temperature: 1.5, seed: 3 }))).text).not.toBe(greedy);
  });

  it("no top_k is no truncation, not node-llama-cpp's default of 40", async () => {
    const unset = await generate(ask({ seed: 42, temperature: 1.5 }));
    const forty = await generate(ask({ seed: 42, temperature: 1.5, top_k: 40 }));
    expect(unset.text).not.toBe(forty.text);
  });
});

describe("§2.1 presence_penalty, frequency_penalty, repetition_penalty", () => {
  it("each changes the greedy answer, which otherwise repeats itself", async () => {
    const greedy = (await generate(ask({ temperature: 0 }))).text;
    for (const penalty of [{ presence_penalty: 2 }, { frequency_penalty: 2 }, { repetition_penalty: 2 }]) {
      expect((await generate(ask({ temperature: 0, ...penalty }))).text, JSON.stringify(penalty)).not.toBe(greedy);
    }
  });
});

describe("§2.1 logit_bias", () => {
  it("+100 on one token forces it", async () => {
    const { text } = await generate(ask({ seed: 5, max_tokens: 12, logit_bias: { [token("x")]: 100 } }));
    expect(text).toBe("x".repeat(12));
  });

  it("-100 keeps a token out of the greedy answer", async () => {
    const greedy = (await generate(ask({ temperature: 0 }))).text;
    const banned = greedy[0]!;
    const { text } = await generate(ask({ temperature: 0, logit_bias: { [token(banned)]: -100 } }));
    expect(text).not.toContain(banned);
    expect(text).toHaveLength(40);
  });

  it("+100 on the end-of-turn token ends the answer at once with finish_reason stop", async () => {
    const { text, done } = await generate(ask({ logit_bias: { [IM_END]: 100 } }));
    expect([text, done.completion_tokens, done.finish_reason]).toEqual(["", 0, "stop"]);
  });

  it("a token id past the vocabulary is invalid_value naming it, before anything is generated", async () => {
    const error = await generate(ask({ logit_bias: { "261": 1 } })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect([(error as ApiError).code, (error as ApiError).param]).toEqual(["invalid_value", "logit_bias.261"]);
    // the engine is free again at once
    expect((await generate(ask({ max_tokens: 2 }))).done.completion_tokens).toBe(2);
  });
});
