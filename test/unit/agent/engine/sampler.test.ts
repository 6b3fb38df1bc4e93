// SPEC §2.1's sampling controls as the agent hands them to node-llama-cpp: a pure mapping from the sealed
// request to evaluate() options, every setting explicit, OpenAI's defaults where the caller set nothing.
import type { Token, Tokenizer } from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import type { GenerateRequest } from "../../../../agent/engine/turn.ts";
import { llamaSeed, samplerOptions, type SamplerContext } from "../../../../agent/engine/sampler.ts";
import { catchApiError } from "../../../fixtures/api-error.ts";
import { engineRequest } from "../../../fixtures/engine-request.ts";

const EOG = 258;
const tokenizer = { isEogToken: (token: Token) => token === EOG } as unknown as Tokenizer;
const request = (sampling: Partial<GenerateRequest> = {}) => engineRequest({ temperature: 0.8, ...sampling });
const context = (extra: Partial<SamplerContext> = {}): SamplerContext => ({
  tokenizer,
  vocabularySize: 261,
  answer: [],
  budget: 50,
  randomSeed: () => 1234,
  ...extra,
});
const biases = (options: ReturnType<typeof samplerOptions>) =>
  Object.fromEntries((options.tokenBias as unknown as { _biases: Map<Token, number> })._biases);

describe("§2.1 sampling controls → node-llama-cpp evaluate() options", () => {
  it("with none set: OpenAI's defaults, stated outright (top_p 1, no top_k, min_p 0) and a fresh seed", () => {
    expect(samplerOptions(request(), context())).toEqual({ temperature: 0.8, topP: 1, topK: null, minP: 0, seed: 1234 });
  });

  it("top_p, top_k and min_p pass through", () => {
    expect(samplerOptions(request({ top_p: 0.5, top_k: 7, min_p: 0.05 }), context())).toMatchObject({ topP: 0.5, topK: 7, minP: 0.05 });
  });

  it("top_k 0 and top_k at or past the vocabulary keep every token, as in llama-server: no top-k step at all", () => {
    for (const top_k of [0, 261, 10_000]) expect(samplerOptions(request({ top_k }), context()).topK).toBeNull();
    expect(samplerOptions(request({ top_k: 260 }), context()).topK).toBe(260);
  });

  it("seed: the caller's, reduced to llama.cpp's 32 bits without ever reaching its 'random' value 0xFFFFFFFF", () => {
    const random = () => 99;
    expect(llamaSeed(42, random)).toBe(42);
    expect(llamaSeed(0, random)).toBe(0);
    expect(llamaSeed(2 ** 32 - 2, random)).toBe(2 ** 32 - 2);
    expect(llamaSeed(2 ** 32 - 1, random)).toBe(0);
    expect(llamaSeed(-2, random)).toBe(2 ** 32 - 3);
    expect(llamaSeed(Number.MAX_SAFE_INTEGER, random)).toBe(Number.MAX_SAFE_INTEGER % (2 ** 32 - 1));
    expect(samplerOptions(request({ seed: 7 }), context()).seed).toBe(7);
  });

  it("seed absent or -1 (llama-server's 'random'): a fresh 32-bit seed per request, never the clock's second", () => {
    expect(llamaSeed(undefined, () => 5)).toBe(5);
    expect(llamaSeed(-1, () => 5)).toBe(5);
    const seeds = Array.from({ length: 8 }, () => samplerOptions(request(), context({ randomSeed: undefined })).seed!);
    for (const seed of seeds) expect(Number.isInteger(seed) && seed >= 0 && seed < 2 ** 32 - 1).toBe(true);
    expect(new Set(seeds).size).toBeGreaterThan(1);
  });

  it("no penalty set: no repeat penalty at all", () => {
    expect(samplerOptions(request({ top_p: 0.9 }), context()).repeatPenalty).toBeUndefined();
  });

  it("presence, frequency and repetition penalties count the answer so far, over a window as long as the budget", () => {
    const answer: Token[] = [];
    const options = samplerOptions(request({ presence_penalty: 0.5, frequency_penalty: -1 }), context({ answer }));
    const penalty = options.repeatPenalty;
    if (!penalty) throw new Error("expected a repeat penalty");
    expect(penalty).toMatchObject({ penalty: 1, presencePenalty: 0.5, frequencyPenalty: -1, maxPunishTokens: 50 });
    // the loop appends to the same array: the penalty reads it live at each step
    answer.push(3 as Token, 4 as Token);
    expect((penalty.punishTokens as () => Token[])()).toEqual([3, 4]);
    expect(samplerOptions(request({ repetition_penalty: 1.3 }), context()).repeatPenalty).toMatchObject({
      penalty: 1.3,
      presencePenalty: 0,
      frequencyPenalty: 0,
    });
  });

  it("logit_bias: each value is added to the logit (OpenAI), not read as a probability", () => {
    const options = samplerOptions(request({ logit_bias: { "5": 100, "6": 0.5, "7": -100 } }), context());
    expect(biases(options)).toEqual({ 5: 100, 6: 0.5, 7: -100 });
  });

  it("logit_bias on an end-of-generation token is kept too (TokenBias.set would drop it)", () => {
    expect(biases(samplerOptions(request({ logit_bias: { [String(EOG)]: -100 } }), context()))).toEqual({ [EOG]: -100 });
  });

  it("logit_bias naming a token the model does not have is invalid_value naming the key", () => {
    const error = catchApiError(() => samplerOptions(request({ logit_bias: { "3": 1, "261": 1 } }), context()));
    expect([error.code, error.param]).toEqual(["invalid_value", "logit_bias.261"]);
  });
});
