// The distribution an honest provider drew each token from (issue 43, AUDIT-DESIGN §2 S2), rebuilt from the reference:
// the request's top-k, top-p and min-p, then its temperature, in the order node-llama-cpp's sampler chain applies them
// (AddonSampler.cpp: top_k → top_p → min_p → temperature → dist). Over an answer's positions the sum of each token's
// log probability plus that distribution's entropy, over the root of the summed variances, is ~N(0, 1) for honest
// sampling; a provider whose text came from other weights moves it, often upward (a smaller model's text is more
// likely under the big one). Portable: plain numbers in and out.

/** The sealed request's sampling fields that shape the distribution a token is drawn from. */
export interface SamplingSettings {
  temperature: number;
  top_k?: number;
  top_p?: number;
  min_p?: number;
}

/**
 * The tokens an honest provider could draw and their log probabilities, most likely first, from the reference's
 * log probabilities of the raw logits ([id, logprob], any order). Temperature 0 is greedy: the argmax alone.
 */
export function samplingDistribution(logprobs: readonly (readonly [number, number])[], settings: SamplingSettings): [number, number][] {
  let kept = [...logprobs].sort((a, b) => b[1] - a[1]) as [number, number][];
  if (kept.length === 0) return [];
  if (settings.temperature === 0) return [[kept[0]![0], 0]];
  const { top_k, top_p, min_p } = settings;
  if (top_k !== undefined && top_k > 0) kept = kept.slice(0, top_k);
  if (top_p !== undefined && top_p < 1) {
    // the smallest most-likely prefix whose mass, renormalised over what is left, reaches top_p (at least one token)
    const normal = normalised(kept);
    let mass = 0;
    let keep = 0;
    while (keep < normal.length && (keep === 0 || mass < top_p)) mass += Math.exp(normal[keep++]![1]);
    kept = kept.slice(0, keep);
  }
  if (min_p !== undefined && min_p > 0) {
    const floor = kept[0]![1] + Math.log(min_p);
    kept = kept.filter(([, lp], i) => i === 0 || lp >= floor);
  }
  return normalised(kept.map(([id, lp]) => [id, lp / settings.temperature]));
}

/** Log probabilities shifted so that they sum to 1 (log-sum-exp from the largest, which comes first). */
function normalised(sorted: readonly [number, number][]): [number, number][] {
  const top = sorted[0]![1];
  const total = top + Math.log(sorted.reduce((sum, [, lp]) => sum + Math.exp(lp - top), 0));
  return sorted.map(([id, lp]) => [id, lp - total]);
}

/** One position of a sampled answer: the drawn token's log probability under the distribution, its entropy and variance. */
export interface SampledPosition {
  /** log p̃(y); -Infinity when the distribution could not have drawn y. */
  logprob: number;
  /** H = −Σ p̃ log p̃. */
  entropy: number;
  /** Var of log p̃(Y) for Y ~ p̃. */
  variance: number;
}

/** The position of token `id` under a distribution from samplingDistribution. */
export function sampledPosition(distribution: readonly [number, number][], id: number): SampledPosition {
  let entropy = 0;
  let square = 0;
  let logprob = -Infinity;
  for (const [token, lp] of distribution) {
    const p = Math.exp(lp);
    entropy -= p * lp;
    square += p * lp * lp;
    if (token === id) logprob = lp;
  }
  return { logprob, entropy, variance: Math.max(0, square - entropy * entropy) };
}

/**
 * Z = Σ(log p̃(y_t) + H_t) / √Σ V_t over the positions: each term has mean 0 and variance V_t for an honest draw, so
 * Z is ~N(0, 1) (a martingale sum). Infinite when a token could not have been drawn; 0 when no position had a choice.
 */
export function samplingZ(positions: readonly SampledPosition[]): number {
  let sum = 0;
  let variance = 0;
  for (const p of positions) {
    sum += p.logprob + p.entropy;
    variance += p.variance;
  }
  if (sum === -Infinity) return -Infinity;
  return variance === 0 ? 0 : sum / Math.sqrt(variance);
}
