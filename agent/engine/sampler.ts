// From the sealed request's sampling controls to node-llama-cpp's evaluate() options, with every setting
// explicit: the library's own defaults (topK 40, topP 0.95, a seed from the clock's second) never apply unseen.
import { randomInt } from "node:crypto";
import { TokenBias, type SequenceEvaluateOptions, type Token, type Tokenizer } from "node-llama-cpp";
import { ApiError } from "../../src/errors.ts";
import { RANDOM_SEED } from "../../src/session/sampling.ts";
import type { GenerateRequest } from "./turn.ts";

export interface SamplerContext {
  tokenizer: Tokenizer;
  /** Token ids run from 0 to this less one. */
  vocabularySize: number;
  /** The answer's tokens so far; the generation loop appends to it while penalties are on. */
  answer: readonly Token[];
  /** The most tokens this answer may have. */
  budget: number;
  /** Where a seed comes from when the caller gave none. */
  randomSeed?: () => number;
}

/** llama.cpp seeds are 32 bits, and 0xFFFFFFFF is its own "pick one at random": seeds fold into the rest. */
const SEEDS = 2 ** 32 - 1;
const newSeed = () => randomInt(SEEDS);

// evaluate() reads an absent topK as 40, and a topK of 0 as the whole vocabulary, which sorts all of it on every
// token (about 8 ms for Qwen3's 151,936 tokens, timing llama.cpp's sort alone on this machine). null is the value
// that leaves top-k out of the sampler chain, as top_k 0 does in llama-server; an engine test shows it is not 40.
const NO_TOP_K = null as unknown as number;

/** What evaluate() is given for this request: OpenAI's defaults (top_p 1, no top_k, no penalties) unless set. */
export function samplerOptions(request: GenerateRequest, context: SamplerContext): SequenceEvaluateOptions {
  const options: SequenceEvaluateOptions = {
    temperature: request.temperature,
    topP: request.top_p ?? 1,
    topK: request.top_k === undefined || request.top_k === 0 || request.top_k >= context.vocabularySize ? NO_TOP_K : request.top_k,
    minP: request.min_p ?? 0,
    seed: llamaSeed(request.seed, context.randomSeed ?? newSeed),
  };
  if (penalised(request)) {
    options.repeatPenalty = {
      punishTokens: () => context.answer as Token[],
      // the whole answer, as OpenAI counts; a fixed window lets llama.cpp add one token per step instead of
      // rebuilding its counts (it rebuilds whenever the window changes)
      maxPunishTokens: context.budget,
      penalty: request.repetition_penalty ?? 1,
      presencePenalty: request.presence_penalty ?? 0,
      frequencyPenalty: request.frequency_penalty ?? 0,
    };
  }
  if (request.logit_bias !== undefined) options.tokenBias = tokenBias(request.logit_bias, context);
  return options;
}

/** Whether the generation loop must keep the answer's tokens for the penalties. */
export function penalised(request: GenerateRequest): boolean {
  return request.presence_penalty !== undefined || request.frequency_penalty !== undefined || request.repetition_penalty !== undefined;
}

/** The caller's seed reduced to llama.cpp's 32 bits; -1 (llama-server's "random") or none draws a fresh one. */
export function llamaSeed(seed: number | undefined, random: () => number): number {
  if (seed === undefined || seed === RANDOM_SEED) return random();
  return ((seed % SEEDS) + SEEDS) % SEEDS;
}

/** TokenBias's internal map: its set() skips end-of-generation tokens, which OpenAI's logit_bias may name. */
type BiasMap = { _biases: Map<Token, number> };

export function biasMap(bias: TokenBias): Map<Token, number> {
  const map = (bias as unknown as Partial<BiasMap>)._biases;
  if (!(map instanceof Map)) throw new Error("node-llama-cpp's TokenBias no longer keeps _biases: logit_bias on end-of-turn tokens needs another way in");
  return map;
}

/**
 * OpenAI semantics: each value is added to that token's logit ({logit}), not TokenBias's probability form; the
 * `never` tokens are banned outright (tool calling bans markup inside arguments, or `<tool_call>` itself).
 */
export function tokenBias(bias: Record<string, number> | undefined, context: Pick<SamplerContext, "tokenizer" | "vocabularySize">, never: readonly Token[] = []): TokenBias {
  const out = new TokenBias(context.tokenizer);
  for (const [key, logit] of Object.entries(bias ?? {})) {
    const token = Number(key) as Token;
    if (token >= context.vocabularySize) {
      throw new ApiError("invalid_value", `logit_bias: this model has no token ${key}; its ids run from 0 to ${context.vocabularySize - 1}.`, {
        param: `logit_bias.${key}`,
      });
    }
    if (context.tokenizer.isEogToken(token)) biasMap(out).set(token, logit);
    else out.set(token, { logit });
  }
  for (const token of never) out.set(token, "never"); // after the caller's bias, which must not lift a ban
  return out;
}
