// Issue 43 item 2's measurement: which statistic, and which threshold, tell an honest provider's signed logprobs from
// a substitute's. Honest providers (the real Engine) differ from the auditor only in threads, batch size and context
// size; substitutes serve other weights under the pinned name (another seed, a Q4_0 round trip, a layer removed) or
// the right weights with made-up logprobs. Each audit: the provider answers a prompt with its logprobs, the auditor
// re-scores the answer on the pinned GGUF (agent/engine/rescore.ts, 1 thread, batch 512) and computes every statistic
// candidate (src/audit/statistic.ts); the cells are audit-cells.ts's, which the bench's audit section shares. Output:
// bench/results/audit-measure.json; the table goes in bench/README.md.
// Run: `tsx bench/audit-measure.ts [--audits 24]` (a few minutes on the tiny model).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { getLlama } from "node-llama-cpp";
import { ModelStore } from "../agent/models/store.ts";
import type { AuditStatistic } from "../src/audit/statistic.ts";
import { writeTinyCatalog } from "../tiny-model/catalog.ts";
import { ALIAS, AUDITOR, HONEST, LIES, PINNED, SWAPS, runCell, summary } from "./audit-cells.ts";
import { auditsFor } from "./stats.ts";

const AUDITS = Number(process.argv[process.argv.indexOf("--audits") + 1] || 24);
const STATISTICS = ["mean", "p95", "max", "meanListed", "absBias"] as const;
type StatisticName = (typeof STATISTICS)[number];
const PROVIDERS = [...HONEST, ...SWAPS, ...LIES];

const value = (s: AuditStatistic, name: StatisticName) => (name === "absBias" ? Math.abs(s.bias) : s[name]);
/** Audits for a 95 % chance of at least one failure, when one audit fails with probability p on a share f of requests. */
const auditsFor95 = (p: number, f = 1) => auditsFor(0.95, p, f) ?? Infinity;

async function main(): Promise<void> {
  const dir = mkdtempSync(join(os.tmpdir(), "svc-audit-measure-"));
  const llama = await getLlama({ gpu: false });
  try {
    const pinned = writeTinyCatalog(join(dir, "pinned"), [{ alias: ALIAS, ...PINNED }]);
    const reference = { catalog: pinned, model: await llama.loadModel({ modelPath: (await new ModelStore({ catalog: pinned.catalog, modelsDir: pinned.modelsDir }).verify(ALIAS)).path }) };
    const results: { label: string; kind: string; audits: AuditStatistic[]; ms: number }[] = [];
    for (const [n, provider] of PROVIDERS.entries()) {
      const runs = await runCell(dir, reference, provider, `p${n}`, Array.from({ length: AUDITS }, (_, i) => i));
      const audits = runs.map((r) => r.statistic);
      const ms = runs.reduce((s, r) => s + r.rescoreMs, 0);
      results.push({ label: provider.label, kind: provider.kind, audits, ms: ms / AUDITS });
      console.error(`${provider.label}: ${AUDITS} audits, mean ${summary(audits.map((a) => a.mean)).median.toExponential(2)} median, ${(ms / AUDITS).toFixed(0)} ms a re-score`);
    }
    await reference.model.dispose();

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
