// Bench section `audit` (issue 43 item 5): what audits of the weights catch, and what they cost. On the tiny model
// (audit-cells.ts): each substitute's per-audit detection probability and the audits it takes to be caught (by
// formula, checked on bootstrapped audit sequences); the false alarms of honest providers over threads × batch ×
// context; the auditor's CPU per audit at the tiny vocabulary and at Qwen3's; and the share of a provider's time that
// audits take at the default pacing (the gateway's own AuditScheduler on a simulated clock, with measured session times).
import { join } from "node:path";
import { getLlama, type Llama } from "node-llama-cpp";
import { rescore } from "../agent/engine/rescore.ts";
import { ModelStore } from "../agent/models/store.ts";
import { DEFAULT_AUDIT_PACING, AuditScheduler } from "../gateway/audit/scheduler.ts";
import { auditStatistic, type AuditStatistic } from "../src/audit/statistic.ts";
import { AUDIT_FAIL_MEAN, auditVerdict } from "../src/audit/thresholds.ts";
import { writeTinyCatalog } from "../tiny-model/catalog.ts";
import { prng } from "../tiny-model/gguf.ts";
import { ALIAS, AUDITOR, HONEST, LIES, PINNED, SWAPS, runCell, summary, type AuditRun, type Reference } from "./audit-cells.ts";
import { auditsFor, percentile, type Table } from "./stats.ts";

/** How each audit's statistic is kept in the results: a tuple in this order (the unit test rebuilds it). */
export const STATISTIC_FIELDS = ["n", "mean", "p95", "max", "bias", "meanListed", "greedyViolations"] as const satisfies readonly (keyof AuditStatistic)[];
const QWEN3_VOCABULARY = 151_936;
const TARGETS = [0.5, 0.95, 0.99] as const;
const CHEAT_FRACTIONS = [0.1, 0.25, 0.5] as const;
const BOOTSTRAP_SEQUENCES = 200;
/** Loads (ordinary sessions an hour on one provider) for the time share. */
const LOADS = [1, 10, 100, 1000] as const;

export interface SubstituteResult {
  label: string;
  /** The share of requests it cheats on (1: every one). */
  f: number;
  /** Its audits' statistics, or, for a part-time cheat, the substitute whose audits it serves on its share. */
  audits: number[][] | { of: string };
  auditCount: number;
  meanMedian: number;
  meanP1: number;
  /** Per-audit detection probability: the share of its audits whose verdict is fail. */
  p: number;
  /** ⌈ln(1 − q) / ln(1 − f·p)⌉ for q = 50, 95, 99 % (null: never). */
  auditsTo: (number | null)[];
  /** The same read off bootstrapped sequences of audits (null: not within the cap). */
  bootstrapTo: (number | null)[];
}

export interface AuditBenchResult {
  model: { pinned: typeof PINNED; note: string };
  auditor: typeof AUDITOR;
  threshold: { AUDIT_FAIL_MEAN: number };
  statisticFields: typeof STATISTIC_FIELDS;
  honest: { label: string; threads: number; batchSize: number; contextSize: number; verdicts: Record<string, number>; largestMean: number; audits: number[][] }[];
  honestAudits: number;
  substitutes: SubstituteResult[];
  cpu: { model: string; vocabulary: number; audits: number; promptTokens: number; answerTokens: number; prefillMs: number; msPerPosition: number; auditMs: number }[];
  timeShare: { load: number; hours: number; auditsPerHour: number; sessionMs: number; busyShare: number; wallShare: number }[];
}

const tuple = (s: AuditStatistic) => STATISTIC_FIELDS.map((f) => s[f]);
const failed = (s: AuditStatistic) => auditVerdict(s) === "fail";

/** First-detection index of each of `sequences` random audit sequences: f of them from `cheat`, the rest honest. */
function bootstrap(cheat: readonly boolean[], honest: readonly boolean[], f: number, random: () => number, cap = 100_000): (number | null)[] {
  const firsts: number[] = [];
  for (let s = 0; s < BOOTSTRAP_SEQUENCES; s++) {
    let k = 1;
    for (; k <= cap; k++) {
      const pool = random() < f ? cheat : honest;
      if (pool[Math.floor(random() * pool.length)]) break;
    }
    firsts.push(k);
  }
  return TARGETS.map((q) => {
    const at = percentile(firsts, q * 100);
    return at > cap ? null : at;
  });
}

function substitute(label: string, statistics: AuditStatistic[], honestFails: boolean[], random: () => number): SubstituteResult {
  const fails = statistics.map(failed);
  const p = fails.filter(Boolean).length / fails.length;
  const means = summary(statistics.map((s) => s.mean));
  return { label, f: 1, audits: statistics.map(tuple), auditCount: statistics.length, meanMedian: means.median, meanP1: means.p1, p, auditsTo: TARGETS.map((q) => auditsFor(q, p)), bootstrapTo: bootstrap(fails, honestFails, 1, random) };
}

/** The auditor's CPU: a pass over the prompt and one answer token (prefill), and over the whole answer. */
async function cpuOf(dir: string, llama: Llama, label: string, vocabularySize: number | undefined, runs: AuditRun[], count: number, reference?: Reference) {
  let ref = reference;
  let generated = runs;
  if (ref === undefined) {
    const catalog = writeTinyCatalog(join(dir, label), [{ alias: ALIAS, ...PINNED, vocabularySize }]);
    ref = { catalog, model: await llama.loadModel({ modelPath: (await new ModelStore({ catalog: catalog.catalog, modelsDir: catalog.modelsDir }).verify(ALIAS)).path }) };
    generated = await runCell(dir, ref, HONEST[0]!, `${label}-provider`, Array.from({ length: count }, (_, i) => i));
  }
  const prefill: number[] = [];
  let extraMs = 0;
  let extraPositions = 0;
  const whole: number[] = [];
  let promptTokens = 0;
  let answerTokens = 0;
  for (const run of generated.slice(0, count)) {
    const ids = run.entries.map((e) => e.id);
    const t0 = performance.now();
    const head = await rescore(ref.model, run.request, ids.slice(0, 1), AUDITOR);
    const t1 = performance.now();
    await rescore(ref.model, run.request, ids, AUDITOR);
    const t2 = performance.now();
    prefill.push(t1 - t0);
    whole.push(t2 - t1);
    extraMs += t2 - t1 - (t1 - t0);
    extraPositions += ids.length - 1;
    promptTokens += head.promptTokens;
    answerTokens += ids.length;
  }
  if (reference === undefined) await ref.model.dispose();
  const n = Math.min(count, generated.length);
  return {
    model: label,
    vocabulary: ref.model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? 0,
    audits: n,
    promptTokens: Math.round(promptTokens / n),
    answerTokens: Math.round(answerTokens / n),
    prefillMs: percentile(prefill, 50),
    msPerPosition: extraMs / Math.max(1, extraPositions),
    auditMs: percentile(whole, 50),
  };
}

/** Audits an hour at `load` ordinary sessions an hour, by the gateway's scheduler on a simulated clock. */
function timeShare(load: number, hours: number, sessions: readonly number[], random: () => number) {
  let now = 0;
  const scheduler = new AuditScheduler(DEFAULT_AUDIT_PACING, { now: () => now, random });
  const end = hours * 3_600_000;
  const draw = () => sessions[Math.floor(random() * sessions.length)]!;
  let audits = 0;
  let ordinaryMs = 0;
  let auditMs = 0;
  for (;;) {
    now += (-Math.log(1 - random()) * 3_600_000) / load;
    if (now >= end) break;
    ordinaryMs += draw();
    if (scheduler.placed("provider") !== undefined) (audits++, (auditMs += draw()));
  }
  return { load, hours, auditsPerHour: audits / hours, sessionMs: sessions.reduce((s, v) => s + v, 0) / sessions.length, busyShare: auditMs / (auditMs + ordinaryMs), wallShare: auditMs / end };
}

export async function auditBench(dir: string, quick: boolean): Promise<{ results: AuditBenchResult; tables: Table[] }> {
  // under contention a 2-thread provider spins at its barriers (here ~0.5 s a token at a load average of 17 on 2
  // cores, against ~5 ms with 1 thread), so the 2-thread cells get fewer audits, and run beside the rest
  const perCell = (threads: number) => (quick ? (threads === 1 ? 3 : 1) : threads === 1 ? 110 : 16);
  const perSwap = quick ? 3 : 64;
  const random = prng(43);
  const llama = await getLlama({ gpu: false });
  try {
    const pinned = writeTinyCatalog(join(dir, "audit-pinned"), [{ alias: ALIAS, ...PINNED }]);
    const reference: Reference = { catalog: pinned, model: await llama.loadModel({ modelPath: (await new ModelStore({ catalog: pinned.catalog, modelsDir: pinned.modelsDir }).verify(ALIAS)).path }) };
    // honest cells: each its own requests, so the 500 audits are 500 different (prompt, seed, sampling) requests
    const first = HONEST.map((_, k) => HONEST.slice(0, k).reduce((n, h) => n + perCell(h.threads!), 0));
    const honestRuns: AuditRun[][] = [];
    const swapRuns = new Map<string, AuditRun[]>();
    const lane = async (threads: number) => {
      for (const [k, provider] of HONEST.entries()) {
        if (provider.threads !== threads) continue;
        honestRuns[k] = await runCell(dir, reference, provider, `honest${k}`, Array.from({ length: perCell(threads) }, (_, i) => first[k]! + i));
        console.error(`audit: ${provider.label}, ${perCell(threads)} audits`);
      }
      if (threads !== 1) return;
      for (const [k, provider] of SWAPS.entries()) {
        swapRuns.set(provider.label, await runCell(dir, reference, provider, `swap${k}`, Array.from({ length: perSwap }, (_, i) => i)));
        console.error(`audit: ${provider.label}, ${perSwap} audits`);
      }
    };
    await Promise.all([lane(1), lane(2)]);
    const honestAll = honestRuns.flat();
    const honestFails = honestAll.map((r) => failed(r.statistic));
    const honest = HONEST.map((provider, k) => {
      const verdicts: Record<string, number> = {};
      for (const r of honestRuns[k]!) verdicts[auditVerdict(r.statistic)] = (verdicts[auditVerdict(r.statistic)] ?? 0) + 1;
      return { label: provider.label, threads: provider.threads!, batchSize: provider.batchSize!, contextSize: provider.contextSize!, verdicts, largestMean: Math.max(...honestRuns[k]!.map((r) => r.statistic.mean)), audits: honestRuns[k]!.map((r) => tuple(r.statistic)) };
    });

    const substitutes: SubstituteResult[] = SWAPS.map((provider) => substitute(provider.label, swapRuns.get(provider.label)!.map((r) => r.statistic), honestFails, random));
    // made-up logprobs on the pinned model's own answers: the reference depends only on the request and the tokens, so
    // every honest audit's reference positions serve again
    for (const provider of LIES) {
      substitutes.push(substitute(provider.label, honestAll.map((r) => auditStatistic(provider.lie!(r.entries, r.i), r.positions)), honestFails, random));
    }
    const q4 = substitutes.find((s) => s.label === "Q4_0 round trip")!;
    const q4Fails = swapRuns.get(q4.label)!.map((r) => failed(r.statistic));
    for (const f of CHEAT_FRACTIONS) {
      substitutes.push({ ...q4, label: `Q4_0 on ${f * 100} % of requests`, f, audits: { of: q4.label }, auditsTo: TARGETS.map((q) => auditsFor(q, q4.p, f)), bootstrapTo: bootstrap(q4Fails, honestFails, f, random) });
    }

    const cpu = [
      await cpuOf(dir, llama, "tiny", undefined, honestRuns[HONEST.findIndex((h) => h.threads === 1 && h.batchSize === 512)]!, quick ? 4 : 16, reference),
      await cpuOf(dir, llama, "tiny, Qwen3 vocabulary", QWEN3_VOCABULARY, [], quick ? 1 : 6),
    ];
    await reference.model.dispose();
    // a provider's session time: the 1-thread cells' (the 2-thread ones here measure the box's contention)
    const sessions = honestRuns.filter((_, k) => HONEST[k]!.threads === 1).flat().map((r) => r.sessionMs);
    const hours = quick ? 200 : 2000;
    const shares = LOADS.map((load) => timeShare(load, hours, sessions, random));

    const results: AuditBenchResult = {
      model: { pinned: PINNED, note: "tiny qwen3, 4 layers, F32, CPU; 32-token answers" },
      auditor: AUDITOR,
      threshold: { AUDIT_FAIL_MEAN },
      statisticFields: STATISTIC_FIELDS,
      honest,
      honestAudits: honestAll.length,
      substitutes,
      cpu,
      timeShare: shares,
    };
    const e = (x: number) => x.toExponential(1);
    const n = (x: number | null) => (x === null ? "never" : x);
    const tables: Table[] = [
      {
        title: "9a. Audits: detection power against the number of audits, per substitute (issue 43)",
        columns: ["substitute", "audits", "share cheated", "mean abs Δ median", "mean abs Δ p1", "p (fail per audit)", "to 50 %", "to 95 %", "to 99 %", "bootstrap 50/95/99 %"],
        rows: substitutes.map((s) => [s.label, s.auditCount, s.f, e(s.meanMedian), e(s.meanP1), s.p, ...s.auditsTo.map(n), s.bootstrapTo.map(n).join(" / ")]),
        note: `Each audit: the provider (the real Engine) answers 32 tokens with logprobs; the auditor re-scores them on the pinned GGUF (${AUDITOR.threads} thread, batch ${AUDITOR.batchSize}). Detected = verdict fail under src/audit/thresholds.ts (mean |Δ| > ${AUDIT_FAIL_MEAN}). "to q" = ⌈ln(1−q)/ln(1−f·p)⌉; bootstrap: ${BOOTSTRAP_SEQUENCES} sequences drawn from the measured audits (a share f from the substitute's, the rest from the honest ones), the audit count by which q of them had a fail. Made-up logprobs are the ${honestAll.length} honest answers' entries rewritten; the part-time cheats serve the Q4_0 round trip on their share.`,
      },
      {
        title: "9b. Audits: false alarms of honest providers (threads × batch × context)",
        columns: ["provider", "audits", "verdicts", "largest mean abs Δ", "× below the fail threshold"],
        rows: [
          ...honest.map((h) => [h.label, h.audits.length, Object.entries(h.verdicts).map(([v, c]) => `${v} ${c}`).join(", "), e(h.largestMean), (AUDIT_FAIL_MEAN / h.largestMean).toFixed(1)]),
          ["all", honestAll.length, `fail ${honestFails.filter(Boolean).length}`, e(Math.max(...honest.map((h) => h.largestMean))), (AUDIT_FAIL_MEAN / Math.max(...honest.map((h) => h.largestMean))).toFixed(1)],
        ],
        note: `Every audit a different request (8 prompts, greedy every third else temperature 0.9, seeds 1000+i, top_logprobs 0 or 3). The auditor's settings are fixed; the provider's vary.`,
      },
      {
        title: "9c. Audits: the auditor's CPU per audit",
        columns: ["model", "vocabulary", "audits", "prompt tokens", "answer tokens", "prefill ms", "ms per answer position", "ms per audit"],
        rows: cpu.map((c) => [c.model, c.vocabulary, c.audits, c.promptTokens, c.answerTokens, c.prefillMs, c.msPerPosition > 0 ? c.msPerPosition : "below noise", c.auditMs]),
        note: "Prefill and whole audit: medians; prefill = a re-scoring pass over the prompt and the answer's first token (context creation included). Per position = Σ(whole pass − prefill) / Σ(answer tokens − 1): one more token decoded, and its distribution read and reduced to its top 20.",
      },
      {
        title: `9d. Audits: a provider's time spent on audits at the default pacing (--audit-rate ${DEFAULT_AUDIT_PACING.rate}, --audit-floor ${DEFAULT_AUDIT_PACING.floorMs / 60_000}m)`,
        columns: ["ordinary sessions / hour", "simulated hours", "audits / hour", "mean session ms", "share of busy time", "share of wall time"],
        rows: shares.map((s) => [s.load, s.hours, s.auditsPerHour, s.sessionMs, `${(s.busyShare * 100).toFixed(2)} %`, `${(s.wallShare * 100).toFixed(4)} %`]),
        note: "Poisson arrivals on one provider; gateway/audit/scheduler.ts decides each audit (1/rate per placement, and the floor's U(30, 60) min, taken at the next ordinary placement). Each session, ordinary or audit, takes a time drawn from the 1-thread honest audits' measured sessions: audits have the shape of ordinary requests, so a provider cannot spend less on them.",
      },
    ];
    return { results, tables };
  } finally {
    await llama.dispose();
  }
}
