// The bench's audit section (issue 43 items 3 and 5), as committed under bench/results/: at least 500 honest audits
// across threads {1, 2} × batch {16, 512}, none failed under src/audit/thresholds.ts as it stands, and every
// substitute's stated number of audits still follows from its audits' verdicts, so no one moves the threshold (or
// the figures in bench/README.md) without running the section again.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { AuditBenchResult } from "../../../bench/audit-bench.ts";
import { auditsFor } from "../../../bench/stats.ts";
import type { AuditStatistic } from "../../../src/audit/statistic.ts";
import { auditVerdict } from "../../../src/audit/thresholds.ts";

const RESULTS = join(import.meta.dirname, "../../../bench/results");

/** The newest full run (not --quick) that has the audit section. */
function committedRun(): { file: string; audit: AuditBenchResult } {
  const runs = readdirSync(RESULTS)
    .filter((name) => /^\d{4}-.*Z\.json$/.test(name))
    .sort()
    .reverse();
  for (const file of runs) {
    const record = JSON.parse(readFileSync(join(RESULTS, file), "utf8")) as { quick: boolean; results: { audit?: AuditBenchResult } };
    if (!record.quick && record.results.audit) return { file, audit: record.results.audit };
  }
  throw new Error(`no full run with an audit section in ${RESULTS}`);
}

const { file, audit } = committedRun();
const statistic = (tuple: number[]): AuditStatistic => Object.fromEntries(audit.statisticFields.map((field, i) => [field, tuple[i]])) as unknown as AuditStatistic;
const failures = (audits: number[][]) => audits.filter((t) => auditVerdict(statistic(t)) === "fail").length;

describe(`bench/results/${file}: false alarms of honest providers`, () => {
  it("has at least 500 honest audits, across threads 1 and 2 and batch sizes 16 and 512", () => {
    expect(audit.honest.reduce((n, cell) => n + cell.audits.length, 0)).toBeGreaterThanOrEqual(500);
    expect(audit.honestAudits).toBe(audit.honest.reduce((n, cell) => n + cell.audits.length, 0));
    for (const threads of [1, 2]) for (const batchSize of [16, 512]) expect(audit.honest.some((c) => c.threads === threads && c.batchSize === batchSize && c.audits.length > 0)).toBe(true);
  });

  it("fails none of them under src/audit/thresholds.ts", () => {
    expect(audit.honest.map((cell) => [cell.label, failures(cell.audits)])).toEqual(audit.honest.map((cell) => [cell.label, 0]));
  });

  it("holds none of them suspect either, so the sequential rule (3 suspects in 10) cannot fail an honest provider", () => {
    const suspects = (audits: number[][]) => audits.filter((t) => auditVerdict(statistic(t)) === "suspect").length;
    expect(audit.honest.map((cell) => [cell.label, suspects(cell.audits)])).toEqual(audit.honest.map((cell) => [cell.label, 0]));
  });
});

describe(`bench/results/${file}: audits to catch each substitute`, () => {
  const byLabel = new Map(audit.substitutes.map((s) => [s.label, s]));
  for (const substitute of audit.substitutes) {
    it(`${substitute.label}: its stated detection and audit counts follow from its audits' verdicts`, () => {
      const own = Array.isArray(substitute.audits) ? substitute.audits : byLabel.get(substitute.audits.of)!.audits;
      if (!Array.isArray(own)) throw new Error(`${substitute.label}: ${JSON.stringify(substitute.audits)} names no measured substitute`);
      const p = failures(own) / own.length;
      expect(p).toBe(substitute.p);
      expect(substitute.auditsTo).toEqual([0.5, 0.95, 0.99].map((q) => auditsFor(q, p, substitute.f)));
      // caught at all: a substitute that no audit catches has no count to state
      expect(substitute.auditsTo[1]).not.toBeNull();
    });
  }
});
