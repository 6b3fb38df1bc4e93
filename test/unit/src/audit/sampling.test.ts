// AUDIT-DESIGN §2 S2 on simulated answers: the distribution an honest provider draws from (the reference after the
// request's top-k, top-p, min-p and temperature, in node-llama-cpp's order), and the Z score of an answer's tokens
// under it, which is ~N(0, 1) for honest sampling and moves for text drawn from other weights.
import { describe, expect, it } from "vitest";
import { sampledPosition, samplingDistribution, samplingZ, type SamplingSettings } from "../../../../src/audit/sampling.ts";

const logs = (ps: number[]): [number, number][] => ps.map((p, i) => [i, Math.log(p)]);
const probabilities = (d: [number, number][]) => d.map(([id, lp]) => [id, Math.round(Math.exp(lp) * 1e6) / 1e6]);

describe("samplingDistribution: what an honest provider draws from", () => {
  const P = logs([0.1, 0.5, 0.3, 0.06, 0.04]);

  it("the reference itself at temperature 1 with no truncation, most likely first", () => {
    expect(probabilities(samplingDistribution(P, { temperature: 1 }))).toEqual([[1, 0.5], [2, 0.3], [0, 0.1], [3, 0.06], [4, 0.04]]);
  });

  it("top_k, then top_p over what top_k left (up to the token that reaches it), then min_p against the most likely", () => {
    expect(probabilities(samplingDistribution(P, { temperature: 1, top_k: 2 }))).toEqual([[1, 0.625], [2, 0.375]]);
    expect(probabilities(samplingDistribution(P, { temperature: 1, top_p: 0.75 }))).toEqual([[1, 0.625], [2, 0.375]]);
    expect(probabilities(samplingDistribution(P, { temperature: 1, top_p: 0.85 }))).toEqual([[1, 0.555556], [2, 0.333333], [0, 0.111111]]);
    // 0.3 ≥ 0.5 × 0.5; 0.1 is not
    expect(probabilities(samplingDistribution(P, { temperature: 1, min_p: 0.5 }))).toEqual([[1, 0.625], [2, 0.375]]);
  });

  it("temperature divides the log probabilities; 0 is greedy", () => {
    expect(probabilities(samplingDistribution(logs([0.25, 0.75]), { temperature: 0.5 }))).toEqual([[1, 0.9], [0, 0.1]]);
    expect(samplingDistribution(P, { temperature: 0 })).toEqual([[1, 0]]);
  });
});

describe("samplingZ over simulated answers", () => {
  // a fixed-seed generator (mulberry32), so the figures below are the same on every run
  function dice(seed: number) {
    let a = seed >>> 0;
    const random = () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const normal = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    return { random, normal };
  }
  const logSoftmax = (logits: number[]): [number, number][] => {
    const top = Math.max(...logits);
    const total = top + Math.log(logits.reduce((s, x) => s + Math.exp(x - top), 0));
    return logits.map((x, i) => [i, x - total]);
  };
  const SETTINGS: SamplingSettings[] = [{ temperature: 1 }, { temperature: 0.7, top_p: 0.9 }, { temperature: 1.3, top_k: 8 }, { temperature: 0.9, min_p: 0.05 }];

  /** Z of `audits` answers of `tokens` tokens over a 16-token vocabulary; `generator` turns the reference's logits into the provider's. */
  function simulate(seed: number, audits: number, tokens: number, generator: (logits: number[], normal: () => number) => number[]): number[] {
    const { random, normal } = dice(seed);
    const draw = (d: [number, number][]) => {
      let u = random();
      for (const [id, lp] of d) if ((u -= Math.exp(lp)) <= 0) return id;
      return d.at(-1)![0];
    };
    return Array.from({ length: audits }, (_, a) => {
      const settings = SETTINGS[a % SETTINGS.length]!;
      const positions = Array.from({ length: tokens }, () => {
        const logits = Array.from({ length: 16 }, () => 2 * normal());
        const token = draw(samplingDistribution(logSoftmax(generator(logits, normal)), settings));
        return sampledPosition(samplingDistribution(logSoftmax(logits), settings), token);
      });
      return samplingZ(positions);
    });
  }

  it("10⁴ honest answers: Z has mean 0 and deviation 1, about 5 % beyond ±1.96, none beyond ±6", () => {
    const z = simulate(1, 10_000, 8, (logits) => logits);
    const mean = z.reduce((s, v) => s + v, 0) / z.length;
    const sd = Math.sqrt(z.reduce((s, v) => s + (v - mean) ** 2, 0) / z.length);
    expect(Math.abs(mean)).toBeLessThan(0.05);
    expect(Math.abs(sd - 1)).toBeLessThan(0.05);
    const tail = z.filter((v) => Math.abs(v) > 1.96).length / z.length;
    expect(tail).toBeGreaterThan(0.035);
    expect(tail).toBeLessThan(0.065);
    expect(Math.max(...z.map(Math.abs))).toBeLessThan(6);
  });

  it("text drawn from a sharper distribution than the request's (a smaller model's, scored by the pinned one) moves Z up", () => {
    const z = simulate(2, 200, 64, (logits) => logits.map((x) => 1.5 * x)).sort((a, b) => a - b);
    expect(z[100]!).toBeGreaterThan(2.5);
  });

  it("a token the request's truncation could not have drawn makes Z -Infinity", () => {
    const distribution = samplingDistribution(logs([0.6, 0.3, 0.1]), { temperature: 1, top_k: 2 });
    expect(samplingZ([sampledPosition(distribution, 2)])).toBe(-Infinity);
  });
});
