// Side by side in one run: the same load against each side in interleaved rounds (the starting side rotating, so
// none always follows the same one), each side's CPU read per process around its own rounds, and its latency
// less its baseline side's ("added"). The peer section and the cluster section compare their sides this way.
import type { Usage } from "../harness/process.ts";
import type { RunResult, Sample } from "./load.ts";
import { summarize } from "./stats.ts";

/** Whatever reports its CPU: a process, or a server of several (PostgreSQL, a NATS cluster). */
export type Measurable = { usage(): Usage };

export interface Side {
  path: string;
  /** The side whose latency is subtracted from this one's ("added"); none for the baselines themselves. */
  baseline?: string;
  procs: Record<string, Measurable>;
  run(concurrency: number, stream: boolean, durationMs: number): Promise<RunResult>;
}

export interface RoundRow {
  path: string;
  mode: "non-stream" | "stream";
  concurrency: number;
  n: number;
  errors: number;
  reqPerS: number;
  p50Ms: number;
  p99Ms: number;
  addedP50Ms?: number;
  addedP99Ms?: number;
  ttftP50Ms?: number;
  /** CPU per request, ms, by process. */
  cpuMsPerRequest: Record<string, number>;
  /** The side's rounds' whole time and CPU by process, ms: an idle side's rate, or a side's CPU less it. */
  elapsedMs: number;
  cpuMs: Record<string, number>;
}

interface Tally {
  samples: Sample[];
  elapsedMs: number;
  errors: number;
  firstError?: string;
  cpuMs: Record<string, number>;
}

export interface RoundsOptions {
  /** For error lines: the section's name. */
  label: string;
  rounds: number;
  concurrency: number[];
  streams: boolean[];
  /** How long one round of a side runs. */
  roundMs(side: Side): number;
}

const cpuNow = (procs: Record<string, Measurable>) => Object.fromEntries(Object.entries(procs).map(([k, p]) => [k, p.usage().cpuMs]));

/** Every side, at every mode and concurrency, in `rounds` interleaved rounds: one row per side and cell. */
export async function interleavedRounds(sides: Side[], options: RoundsOptions): Promise<RoundRow[]> {
  const rows: RoundRow[] = [];
  for (const stream of options.streams) {
    for (const concurrency of options.concurrency) {
      const tallies = new Map(sides.map((s) => [s, { samples: [], elapsedMs: 0, errors: 0, cpuMs: {} } as Tally]));
      for (let round = 0; round < options.rounds; round++) {
        for (let i = 0; i < sides.length; i++) {
          const side = sides[(i + round) % sides.length]!;
          const tally = tallies.get(side)!;
          const before = cpuNow(side.procs);
          const result = await side.run(concurrency, stream, options.roundMs(side));
          const after = cpuNow(side.procs);
          for (const k of Object.keys(after)) tally.cpuMs[k] = (tally.cpuMs[k] ?? 0) + after[k]! - before[k]!;
          tally.samples.push(...result.samples);
          tally.elapsedMs += result.elapsedMs;
          tally.errors += result.errors;
          tally.firstError ??= result.firstError;
        }
      }
      rows.push(...cell(options.label, sides, tallies, stream, concurrency));
    }
  }
  return rows;
}

function cell(label: string, sides: Side[], tallies: Map<Side, Tally>, stream: boolean, concurrency: number): RoundRow[] {
  const summaries = new Map(sides.map((s) => [s.path, summarize(tallies.get(s)!.samples.filter((x) => x.ok).map((x) => x.ms))]));
  return sides.map((side) => {
    const t = tallies.get(side)!;
    if (t.firstError) console.error(`${label}: ${side.path}, c=${concurrency}${stream ? ", stream" : ""}: ${t.errors} failed, the first with: ${t.firstError.slice(0, 300)}`);
    const ok = t.samples.filter((x) => x.ok);
    const own = summaries.get(side.path)!;
    const base = side.baseline ? summaries.get(side.baseline) : undefined;
    return {
      path: side.path,
      mode: stream ? "stream" : "non-stream",
      concurrency,
      n: ok.length,
      errors: t.errors,
      reqPerS: (ok.length / t.elapsedMs) * 1000,
      p50Ms: own.p50,
      p99Ms: own.p99,
      ...(base ? { addedP50Ms: own.p50 - base.p50, addedP99Ms: own.p99 - base.p99 } : {}),
      ...(stream ? { ttftP50Ms: summarize(ok.map((x) => x.ttftMs ?? NaN)).p50 } : {}),
      cpuMsPerRequest: Object.fromEntries(Object.entries(t.cpuMs).map(([k, ms]) => [k, ms / Math.max(1, t.samples.length)])),
      elapsedMs: t.elapsedMs,
      cpuMs: t.cpuMs,
    };
  });
}
