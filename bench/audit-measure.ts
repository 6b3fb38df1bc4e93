// Issue 43 item 2's measurement: which statistic, and which threshold, tell an honest provider's signed logprobs from
// a substitute's. Honest providers (the real Engine) differ from the auditor only in threads, batch size and context
// size; substitutes serve other weights under the pinned name (another seed, a Q4_0 round trip, a layer removed) or
// the right weights with made-up logprobs. Each audit: the provider answers a prompt with its logprobs, the auditor
// re-scores the answer on the pinned GGUF (agent/engine/rescore.ts, 1 thread, batch 512) and computes every statistic
// candidate (src/audit/statistic.ts). Output: bench/results/audit-measure.json; the table goes in bench/README.md.
// Run: `tsx bench/audit-measure.ts [--audits 24]` (a few minutes on the tiny model).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { getLlama } from "node-llama-cpp";
import { Engine } from "../agent/engine/engine.ts";
import { rescore } from "../agent/engine/rescore.ts";
import { planTurn, type GenerateRequest } from "../agent/engine/turn.ts";
import { ModelStore } from "../agent/models/store.ts";
import { auditStatistic, type AuditStatistic } from "../src/audit/statistic.ts";
import type { TokenLogprob } from "../src/receipt/logprobs.ts";
import { writeTinyCatalog } from "../tiny-model/catalog.ts";
import type { TinyModelOptions } from "../tiny-model/gguf.ts";

const AUDITS = Number(process.argv[process.argv.indexOf("--audits") + 1] || 24);
const PINNED: TinyModelOptions = { seed: 3, layers: 4 };
const AUDITOR = { threads: 1, batchSize: 512 };
const STATISTICS = ["mean", "p95", "max", "meanListed", "absBias"] as const;
type StatisticName = (typeof STATISTICS)[number];

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
const request = (i: number): GenerateRequest => ({
  model: "qwen3-4b",
  messages: [{ role: "user", content: PROMPTS[i % PROMPTS.length]! }],
  max_tokens: 32,
  temperature: i % 3 === 0 ? 0 : 0.9,
  seed: 1000 + i,
  top_logprobs: i % 2 === 0 ? 0 : 3,
});

interface Provider {
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

const PROVIDERS: Provider[] = [
  ...[1, 2].flatMap((threads) => [16, 512].flatMap((batchSize) => [2048, 8192].map((contextSize) => ({ label: `honest t${threads} b${batchSize} c${contextSize}`, kind: "honest" as const, threads, batchSize, contextSize })))),
  { label: "another seed", kind: "substitute", model: { seed: 4 } },
  { label: "Q4_0 round trip", kind: "substitute", model: { roundTrip: "q4_0" } },
  { label: "layer 2 of 4 removed", kind: "substitute", model: { dropLayer: 2 } },
  { label: "made-up: ±0.01 nats", kind: "substitute", lie: jitter(0.01) },
  { label: "made-up: ±0.05 nats", kind: "substitute", lie: jitter(0.05) },
  { label: "made-up: constant -1", kind: "substitute", lie: (entries) => entries.map((e) => ({ ...e, logprob: -1 })) },
];

const value = (s: AuditStatistic, name: StatisticName) => (name === "absBias" ? Math.abs(s.bias) : s[name]);
const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
const summary = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return { min: sorted[0]!, p1: quantile(sorted, 0.01), median: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), max: sorted.at(-1)! };
};
/** Audits for a 95 % chance of at least one failure, when one audit fails with probability p on a share f of requests. */
const auditsFor95 = (p: number, f = 1) => (p * f >= 1 ? 1 : p * f <= 0 ? Infinity : Math.ceil(Math.log(0.05) / Math.log(1 - p * f)));

async function main(): Promise<void> {
  const dir = mkdtempSync(join(os.tmpdir(), "svc-audit-measure-"));
  const llama = await getLlama({ gpu: false });
  try {
    const pinned = writeTinyCatalog(join(dir, "pinned"), [{ alias: "qwen3-4b", ...PINNED }]);
    const pinnedPath = (await new ModelStore({ catalog: pinned.catalog, modelsDir: pinned.modelsDir }).verify("qwen3-4b")).path;
    const reference = await llama.loadModel({ modelPath: pinnedPath });
    const results: { label: string; kind: string; audits: AuditStatistic[]; ms: number }[] = [];
    for (const [n, provider] of PROVIDERS.entries()) {
      const catalog = provider.model ? writeTinyCatalog(join(dir, `p${n}`), [{ alias: "qwen3-4b", ...PINNED, ...provider.model }]) : pinned;
      const engine = new Engine({
        store: new ModelStore({ catalog: catalog.catalog, modelsDir: catalog.modelsDir }),
        gpu: false,
        threads: provider.threads ?? 1,
        batchSize: provider.batchSize ?? 512,
        contextSize: provider.contextSize ?? 2048,
        promptCacheGb: 0.05,
      });
      const audits: AuditStatistic[] = [];
      let ms = 0;
      for (let i = 0; i < AUDITS; i++) {
        const req = request(i);
        let entries: TokenLogprob[] = [];
        for await (const event of engine.generate(planTurn(req))) if (event.type === "logprobs") entries.push(...event.logprobs);
        if (provider.lie) entries = provider.lie(entries, i);
        const t0 = performance.now();
        const { positions } = await rescore(reference, req, entries.map((e) => e.id), AUDITOR);
        ms += performance.now() - t0;
        audits.push(auditStatistic(entries, positions));
      }
      await engine.dispose();
      results.push({ label: provider.label, kind: provider.kind, audits, ms: ms / AUDITS });
      console.error(`${provider.label}: ${AUDITS} audits, mean ${summary(audits.map((a) => a.mean)).median.toExponential(2)} median, ${(ms / AUDITS).toFixed(0)} ms a re-score`);
    }
    await reference.dispose();

    const honest = results.filter((r) => r.kind === "honest").flatMap((r) => r.audits);
    const substitutes = results.filter((r) => r.kind === "substitute");
    // per statistic: the honest distribution, each substitute's, and the threshold between the two: the geometric mean
    // of 3 × the honest maximum and the weakest substitute's 1st percentile (a gap under 10× is reported as such)
    const perStatistic = STATISTICS.map((name) => {
      const honestSummary = summary(honest.map((a) => value(a, name)));
      const subs = substitutes.map((s) => ({ label: s.label, ...summary(s.audits.map((a) => value(a, name))) }));
      const weakest = Math.min(...subs.map((s) => s.p1));
      const low = 3 * honestSummary.max;
      const threshold = Math.sqrt(Math.max(low, 1e-12) * weakest);
      const detection = substitutes.map((s) => {
        const p = s.audits.filter((a) => value(a, name) > threshold).length / s.audits.length;
        return { label: s.label, p, auditsFor95: auditsFor95(p) };
      });
      const falseAlarms = honest.filter((a) => value(a, name) > threshold).length;
      return { statistic: name, honest: honestSummary, substitutes: subs, gap: weakest / Math.max(low, 1e-12), threshold, falseAlarms, detection };
    });
    const q4 = perStatistic[0]!.detection.find((d) => d.label === "Q4_0 round trip")!;
    const output = {
      created: new Date().toISOString(),
      model: { ...PINNED, note: "tiny qwen3, 4 layers, F32, CPU" },
      auditor: AUDITOR,
      auditsPerCell: AUDITS,
      honestAudits: honest.length,
      cells: results.map((r) => ({ label: r.label, kind: r.kind, rescoreMs: Math.round(r.ms), mean: summary(r.audits.map((a) => a.mean)), max: summary(r.audits.map((a) => a.max)), greedyViolations: r.audits.reduce((s, a) => s + a.greedyViolations, 0) })),
      perStatistic,
      cheatQ4OnQuarter: { p: q4.p, f: 0.25, auditsFor95: auditsFor95(q4.p, 0.25) },
    };
    const path = join(import.meta.dirname, "results", "audit-measure.json");
    writeFileSync(path, `${JSON.stringify(output, null, 2)}\n`);
    console.log(`| statistic | honest median / max | weakest substitute p1 | gap | threshold | false alarms | audits to 95 % (seed, Q4_0, drop, ±0.01, ±0.05, const) |`);
    console.log(`|---|---|---|---|---|---|---|`);
    const e = (x: number) => x.toExponential(1);
    for (const s of perStatistic) {
      console.log(`| ${s.statistic} | ${e(s.honest.median)} / ${e(s.honest.max)} | ${e(Math.min(...s.substitutes.map((x) => x.p1)))} | ${s.gap.toFixed(0)}× | ${e(s.threshold)} | ${s.falseAlarms}/${honest.length} | ${s.detection.map((d) => d.auditsFor95).join(", ")} |`);
    }
    console.log(`\nwritten ${path}`);
  } finally {
    await llama.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
