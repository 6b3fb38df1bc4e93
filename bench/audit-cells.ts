// Audits of the tiny model (issue 43), shared by the threshold's measurement (audit-measure.ts) and the bench's audit
// section (audit-bench.ts): the requests, the honest providers and the substitutes, and one cell's run. A "provider"
// is the real Engine generating with logprobs; the "auditor" re-scores each answer on the pinned GGUF
// (agent/engine/rescore.ts) and compares the two (src/audit/statistic.ts).
import { join } from "node:path";
import type { LlamaModel } from "node-llama-cpp";
import { Engine } from "../agent/engine/engine.ts";
import { rescore, type RescoreSettings } from "../agent/engine/rescore.ts";
import { planTurn, type GenerateRequest } from "../agent/engine/turn.ts";
import { ModelStore } from "../agent/models/store.ts";
import type { ReferencePosition } from "../src/audit/position.ts";
import { auditStatistic, type AuditStatistic } from "../src/audit/statistic.ts";
import type { TokenLogprob } from "../src/receipt/logprobs.ts";
import { writeTinyCatalog, type WrittenTinyCatalog } from "../tiny-model/catalog.ts";
import type { TinyModelOptions } from "../tiny-model/gguf.ts";

export const PINNED: TinyModelOptions = { seed: 3, layers: 4 };
export const AUDITOR: RescoreSettings = { threads: 1, batchSize: 512 };
/** The alias every catalog here serves, pinned or substitute: the receipt names the same model either way. */
export const ALIAS = "qwen3-4b";

const PROMPTS = [
  "Tell me about the lighthouse keeper.",
  "Write a haiku about rain on a tin roof.",
  "What is the capital of France, and why?",
  "List three uses for a paperclip.",
  "Explain recursion to a child.",
  "Summarise: the quick brown fox jumps over the lazy dog, twice.",
  "Translate 'good morning' into Spanish and German.",
  "Give me a JSON object with a name and an age.",
];

/** Audit i's request: prompts in turn, greedy and sampled, with and without alternatives. */
export const auditRequest = (i: number, model = ALIAS): GenerateRequest => ({
  model,
  messages: [{ role: "user", content: PROMPTS[i % PROMPTS.length]! }],
  max_tokens: 32,
  temperature: i % 3 === 0 ? 0 : 0.9,
  seed: 1000 + i,
  top_logprobs: i % 2 === 0 ? 0 : 3,
});

export interface AuditProvider {
  label: string;
  kind: "honest" | "substitute";
  model?: TinyModelOptions;
  threads?: number;
  batchSize?: number;
  contextSize?: number;
  /** Made-up logprobs: the honest entries rewritten. */
  lie?: (entries: TokenLogprob[], i: number) => TokenLogprob[];
}

/** A deterministic ±1 per (audit, position). */
const sign = (i: number, t: number) => (((i * 7919 + t * 104729) >>> 3) % 2 === 0 ? 1 : -1);
const jitter = (size: number) => (entries: TokenLogprob[], i: number) => entries.map((e, t) => ({ ...e, logprob: Math.min(0, e.logprob + size * sign(i, t)) }));

/** Honest providers differ from the auditor only in threads, batch size and context size. */
export const HONEST: AuditProvider[] = [1, 2].flatMap((threads) =>
  [16, 512].flatMap((batchSize) => [2048, 8192].map((contextSize) => ({ label: `honest t${threads} b${batchSize} c${contextSize}`, kind: "honest" as const, threads, batchSize, contextSize }))),
);
/** Other weights under the pinned name. */
export const SWAPS: AuditProvider[] = [
  { label: "another seed", kind: "substitute", model: { seed: 4 } },
  { label: "Q4_0 round trip", kind: "substitute", model: { roundTrip: "q4_0" } },
  { label: "layer 2 of 4 removed", kind: "substitute", model: { dropLayer: 2 } },
];
/** The pinned weights with made-up logprobs. */
export const LIES: AuditProvider[] = [
  { label: "made-up: ±0.01 nats", kind: "substitute", lie: jitter(0.01) },
  { label: "made-up: ±0.05 nats", kind: "substitute", lie: jitter(0.05) },
  { label: "made-up: constant -1", kind: "substitute", lie: (entries) => entries.map((e) => ({ ...e, logprob: -1 })) },
];

/** One audit: what the provider signed, the auditor's reference, their comparison and the time each side took. */
export interface AuditRun {
  i: number;
  request: GenerateRequest;
  entries: TokenLogprob[];
  positions: ReferencePosition[];
  statistic: AuditStatistic;
  /** The provider's session, generation start to last token (ms). */
  sessionMs: number;
  /** The auditor's re-scoring pass (ms). */
  rescoreMs: number;
}

/** The pinned model's catalog and the auditor's reference copy of it. */
export interface Reference {
  catalog: WrittenTinyCatalog;
  model: LlamaModel;
}

export function providerEngine(dir: string, reference: Reference, provider: AuditProvider, label: string): Engine {
  const catalog = provider.model ? writeTinyCatalog(join(dir, label), [{ alias: ALIAS, ...PINNED, ...provider.model }]) : reference.catalog;
  return new Engine({
    store: new ModelStore({ catalog: catalog.catalog, modelsDir: catalog.modelsDir }),
    gpu: false,
    threads: provider.threads ?? 1,
    batchSize: provider.batchSize ?? 512,
    contextSize: provider.contextSize ?? 2048,
    promptCacheGb: 0.05,
  });
}

/** Audits `provider` on requests `indices`: each answered by the provider, then re-scored by the auditor. */
export async function runCell(dir: string, reference: Reference, provider: AuditProvider, label: string, indices: readonly number[]): Promise<AuditRun[]> {
  const engine = providerEngine(dir, reference, provider, label);
  const runs: AuditRun[] = [];
  try {
    for (const i of indices) {
      const request = auditRequest(i);
      let entries: TokenLogprob[] = [];
      const t0 = performance.now();
      for await (const event of engine.generate(planTurn(request))) if (event.type === "logprobs") entries.push(...event.logprobs);
      const sessionMs = performance.now() - t0;
      if (provider.lie) entries = provider.lie(entries, i);
      const t1 = performance.now();
      const { positions } = await rescore(reference.model, request, entries.map((e) => e.id), AUDITOR);
      const rescoreMs = performance.now() - t1;
      runs.push({ i, request, entries, positions, statistic: auditStatistic(entries, positions), sessionMs, rescoreMs });
    }
  } finally {
    await engine.dispose();
  }
  return runs;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
export const summary = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return { min: sorted[0]!, p1: quantile(sorted, 0.01), median: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), max: sorted.at(-1)! };
};
