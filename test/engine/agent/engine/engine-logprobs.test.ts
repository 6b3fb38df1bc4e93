// Issue 43's logprobs on real llama.cpp with the tiny qwen3 model: each generated token's log probability under the
// model's own distribution at its position (the softmax of the raw logits over the whole vocabulary), whatever the
// request's sampling settings. The reference is what an auditor computes: the prompt and the answer's tokens
// evaluated once, in one batch, on another context of the same GGUF, reading node-llama-cpp's full probabilities of a
// greedy sampler (which leaves the logits as they are) at every position.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getLlama, type Llama, type LlamaContext, type LlamaModel, type Token } from "node-llama-cpp";
import { Engine } from "../../../../agent/engine/engine.ts";
import type { GenerateRequest } from "../../../../agent/engine/turn.ts";
import { ModelStore } from "../../../../agent/models/store.ts";
import { tokenString, type TokenLogprob } from "../../../../src/receipt/logprobs.ts";
import { askEngine, collect } from "../../../fixtures/engine-request.ts";
import { makeTinyCatalog } from "../../../fixtures/tiny-catalog.ts";

const tiny = makeTinyCatalog([{ alias: "qwen3-4b", seed: 3 }]);
const store = new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir });
const engine = new Engine({ store, gpu: false, threads: 1 });
let llama: Llama;
let model: LlamaModel;
let context: LlamaContext;
beforeAll(async () => {
  llama = await getLlama({ gpu: false });
  model = await llama.loadModel({ modelPath: (await store.verify("qwen3-4b")).path });
  context = await model.createContext({ contextSize: 2048, threads: 1 });
});
afterAll(async () => {
  await engine.dispose();
  await context?.dispose();
  await model?.dispose();
  tiny.cleanup();
});

const PROMPT = "The keeper climbed the stairs and";
// the tiny model's vocabulary: token b < 256 is the byte b; 256.. the specials
const ask = (overrides: Partial<GenerateRequest>) => askEngine({ messages: [], prompt: PROMPT, max_tokens: 24, temperature: 0, ...overrides });

/**
 * The reference: every answer position's full distribution, from one batch over prompt and answer (`one`, what an
 * auditor runs), or with the answer's tokens evaluated one at a time after the prompt, as generation does (`each`).
 */
async function reference(answer: readonly number[], batch: "one" | "each"): Promise<Map<Token, number>[]> {
  const prompt = model.tokenize(PROMPT, true);
  const tokens = [...prompt, ...answer.slice(0, -1)] as Token[];
  type Input = Parameters<LlamaContext["getSequence"]>[0] extends never ? never : Parameters<ReturnType<LlamaContext["getSequence"]>["controlledEvaluate"]>[0];
  const next = (token: Token) => [token, { generateNext: { probabilities: true } }] as const;
  const sequence = context.getSequence();
  try {
    if (batch === "one") {
      const input = tokens.map((token, i) => (i >= prompt.length - 1 ? next(token) : token));
      const out = await sequence.controlledEvaluate(input as Input);
      return tokens.slice(prompt.length - 1).map((_, i) => out[prompt.length - 1 + i]!.next!.probabilities!);
    }
    const out: Map<Token, number>[] = [];
    const first = await sequence.controlledEvaluate([...prompt.slice(0, -1), next(prompt.at(-1)!)] as Input);
    out.push(first[prompt.length - 1]!.next!.probabilities!);
    for (const token of answer.slice(0, -1) as Token[]) out.push((await sequence.controlledEvaluate([next(token)] as Input))[0]!.next!.probabilities!);
    return out;
  } finally {
    sequence.dispose();
  }
}

async function generateWith(overrides: Partial<GenerateRequest>) {
  const run = await collect(engine.generate(ask(overrides)));
  return { ...run, entries: run.answer.logprobs };
}

/** The largest difference between the engine's values and the reference's, checking ids and order on the way. */
async function compare(entries: readonly TokenLogprob[], top: number, batch: "one" | "each" = "each"): Promise<number> {
  const distributions = await reference(entries.map((e) => e.id), batch);
  let worst = 0;
  entries.forEach((entry, i) => {
    const probabilities = distributions[i]!;
    worst = Math.max(worst, Math.abs(entry.logprob - Math.log(probabilities.get(entry.id as Token)!)));
    const best = [...probabilities.entries()].sort((a, b) => b[1] - a[1]).slice(0, top);
    expect(entry.top_logprobs).toHaveLength(top);
    entry.top_logprobs.forEach((alt, k) => {
      worst = Math.max(worst, Math.abs(alt.logprob - Math.log(probabilities.get(alt.id as Token)!)));
      // the k-th most likely, up to ties between equal logits
      expect(Math.abs(probabilities.get(alt.id as Token)! - best[k]![1])).toBeLessThan(1e-6);
    });
  });
  return worst;
}

describe("issue 43: the raw distribution at each generated token", () => {
  it("greedy, top_logprobs 5: one entry per completion token, each the token generated, its value and alternatives the one-pass reference's", async () => {
    const { entries, done, events } = await generateWith({ top_logprobs: 5 });
    expect(entries).toHaveLength(done.completion_tokens);
    const generated = model.tokenize((await collect(engine.generate(ask({})))).text, false);
    expect(entries.map((e) => e.id)).toEqual(generated);
    // greedy chooses the most likely: the token is its own first alternative
    for (const entry of entries) expect(entry.top_logprobs[0]!.id).toBe(entry.id);
    // computed as generation computes its logits, the same values to single precision's rounding
    expect(await compare(entries, 5)).toBeLessThan(1e-6);
    // in one batch, as an auditor re-scores (llama.cpp's matrix products add up in another order there): 2e-5 here,
    // up to 3e-4 for unlikely tokens sampled at temperature 1.4; the audit's tolerance is item 2's to choose
    expect(await compare(entries, 5, "one")).toBeLessThan(1e-3);
    // each entry's token string is its bytes', and its bytes the token's own
    for (const entry of entries) expect([entry.token, entry.bytes]).toEqual([tokenString(entry.bytes), [entry.id]]);
    // the logprobs of a token go out just before the text it made
    const kinds = events.map((e) => e.type);
    expect(kinds.slice(0, 2)).toEqual(["logprobs", "delta"]);
  });

  it("temperature, top-k/top-p, penalties and a logit_bias change which tokens come, never how their values are read", async () => {
    // a token with no output row (its logit is 0, far below the printable ones) forced by a bias: outside every top-N
    const forced = 7;
    const { entries } = await generateWith({ top_logprobs: 3, temperature: 1.6, top_k: 50, top_p: 0.9, seed: 5, presence_penalty: 1.5, repetition_penalty: 1.3, logit_bias: { [String(forced)]: 100 } });
    expect(entries.every((e) => e.id === forced)).toBe(true);
    expect(entries.every((e) => !e.top_logprobs.some((alt) => alt.id === forced))).toBe(true);
    expect(entries[0]!.logprob).toBeLessThan(entries[0]!.top_logprobs[2]!.logprob);
    expect(await compare(entries, 3)).toBeLessThan(1e-6);
  });

  it("sampled at temperature 1.4 with no alternatives asked (top_logprobs 0): the chosen tokens' values still the reference's", async () => {
    const { entries, done } = await generateWith({ top_logprobs: 0, temperature: 1.4, seed: 11 });
    expect(entries).toHaveLength(done.completion_tokens);
    expect(entries.every((e) => e.top_logprobs.length === 0)).toBe(true);
    expect(await compare(entries, 0)).toBeLessThan(1e-6);
  });

  it("asking for none: no logprobs piece, and the context's sampling is left as node-llama-cpp made it", async () => {
    const { events } = await generateWith({});
    expect(events.some((e) => e.type === "logprobs")).toBe(false);
    await generateWith({ top_logprobs: 1 });
    const ctx = (engine as unknown as { loaded: { context: { _ctx: object } } }).loaded.context._ctx;
    expect(Object.hasOwn(ctx, "sampleToken")).toBe(false);
  });

  it("a stop sequence's tokens have entries after the last text; the content claims the entries before its text", async () => {
    const plain = await generateWith({ top_logprobs: 1 });
    const stop = plain.text.slice(8, 11);
    const cut = await generateWith({ top_logprobs: 1, stop: [stop] });
    expect(cut.text).toBe(plain.text.slice(0, plain.text.indexOf(stop)));
    expect(cut.entries).toHaveLength(cut.done.completion_tokens);
    // every token before the stop made content, and the content's entries are the first ones; the stop's last token,
    // at least, came after the last text
    const claimed = cut.answer.contentLogprobs;
    expect(claimed.length).toBeGreaterThanOrEqual(cut.text.length);
    expect(claimed.length).toBeLessThan(cut.entries.length);
    expect(claimed).toEqual(cut.entries.slice(0, claimed.length));
    expect(cut.events.at(-2)).toMatchObject({ type: "logprobs" });
  });

  it("a JSON answer, held back until it is whole: its tokens' entries all go before its one delta", async () => {
    const { entries, answer, events, done } = await generateWith({ top_logprobs: 2, response_format: { type: "json_object" }, max_tokens: 40 });
    expect(entries).toHaveLength(done.completion_tokens);
    const delta = events.findIndex((e) => e.type === "delta");
    expect(events.slice(0, delta).every((e) => e.type === "logprobs")).toBe(true);
    expect(answer.contentLogprobs.length).toBeGreaterThan(0);
    expect(await compare(entries, 2)).toBeLessThan(1e-6);
  });
});
