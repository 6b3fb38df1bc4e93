// The audit threshold is the measurement's (issue 43 item 2): bench/audit-measure.ts's committed output must still be
// separated by src/audit/thresholds.ts, so that no one edits the constant without measuring again.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AUDIT_FAIL_MEAN } from "../../../../src/audit/thresholds.ts";

interface Measured {
  honestAudits: number;
  perStatistic: { statistic: string; honest: { max: number }; substitutes: { label: string; min: number }[] }[];
}
const measured = JSON.parse(readFileSync(join(import.meta.dirname, "../../../../bench/results/audit-measure.json"), "utf8")) as Measured;
const mean = measured.perStatistic.find((s) => s.statistic === "mean")!;

describe("the audit threshold against the committed measurement", () => {
  it("every honest audit is below it with at least 3× to spare", () => {
    expect(measured.honestAudits).toBeGreaterThanOrEqual(100);
    expect(3 * mean.honest.max).toBeLessThan(AUDIT_FAIL_MEAN);
  });

  it("every audit of every substitute is above it", () => {
    for (const substitute of mean.substitutes) expect([substitute.label, substitute.min > AUDIT_FAIL_MEAN]).toEqual([substitute.label, true]);
  });
});
