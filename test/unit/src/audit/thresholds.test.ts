// The audit threshold is the measurement's (issue 43 item 2): bench/audit-measure.ts's committed output must still be
// separated by src/audit/thresholds.ts, so that no one edits the constant without measuring again.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GREEDY_GAP } from "../../../../src/audit/statistic.ts";
import { AUDIT_FAIL_MEAN, AUDIT_SUSPECT_MEAN, HONEST_MAX_MEAN, auditVerdict, greedyRequest, sequentialVerdict, type AuditVerdict } from "../../../../src/audit/thresholds.ts";

interface Measured {
  honestAudits: number;
  perStatistic: { statistic: string; honest: { max: number }; substitutes: { label: string; min: number }[] }[];
}
const measured = JSON.parse(readFileSync(join(import.meta.dirname, "../../../../bench/results/audit-measure.json"), "utf8")) as Measured;
const mean = measured.perStatistic.find((s) => s.statistic === "mean")!;
/** The largest honest difference of one token, over every honest audit. */
const tokenMax = measured.perStatistic.find((s) => s.statistic === "max")!.honest.max;

describe("the audit threshold against the committed measurement", () => {
  it("every honest audit is below it with at least 3× to spare", () => {
    expect(measured.honestAudits).toBeGreaterThanOrEqual(100);
    expect(3 * mean.honest.max).toBeLessThan(AUDIT_FAIL_MEAN);
  });

  it("every audit of every substitute is above it", () => {
    for (const substitute of mean.substitutes) expect([substitute.label, substitute.min > AUDIT_FAIL_MEAN]).toEqual([substitute.label, true]);
  });
});

describe("§2 the suspect band against the committed measurement", () => {
  it("HONEST_MAX_MEAN is the measured honest maximum, and the suspect threshold 3× it, still below the fail threshold", () => {
    expect(HONEST_MAX_MEAN).toBeCloseTo(mean.honest.max, 4);
    expect(HONEST_MAX_MEAN).toBeGreaterThanOrEqual(mean.honest.max * 0.99);
    expect(AUDIT_SUSPECT_MEAN).toBeCloseTo(3 * mean.honest.max, 5);
    expect(AUDIT_SUSPECT_MEAN).toBeLessThan(AUDIT_FAIL_MEAN);
  });

  it("no honest audit is suspect, and every substitute's audit fails", () => {
    expect(auditVerdict({ mean: mean.honest.max })).toBe("pass");
    for (const substitute of mean.substitutes) expect([substitute.label, auditVerdict({ mean: substitute.min })]).toEqual([substitute.label, "fail"]);
  });

  it("a greedy violation needs a gap of 3× two tokens' largest honest difference, so an honest near-tie is none", () => {
    expect(GREEDY_GAP).toBeGreaterThanOrEqual(3 * 2 * tokenMax);
    // and far below what another model's choice of token costs (a Q4_0 round trip moves a token's logprob by ~0.15-0.35)
    expect(GREEDY_GAP).toBeLessThan(0.15);
  });
});

describe("§2 auditVerdict", () => {
  it("pass up to the suspect threshold, suspect up to the fail threshold, fail above it", () => {
    expect([AUDIT_SUSPECT_MEAN, AUDIT_SUSPECT_MEAN * 1.01, AUDIT_FAIL_MEAN, AUDIT_FAIL_MEAN * 1.01].map((m) => auditVerdict({ mean: m }))).toEqual(["pass", "suspect", "suspect", "fail"]);
  });

  it("greedy violations, given for a greedy request only, fail an answer whose logprobs are honest", () => {
    expect([auditVerdict({ mean: 1e-5 }, 0), auditVerdict({ mean: 1e-5 }, 1), auditVerdict({ mean: 1e-5 }, undefined)]).toEqual(["pass", "fail", "pass"]);
  });
});

describe("§2 greedyRequest: every honest token is the raw distribution's argmax", () => {
  it("temperature 0 with nothing that moves or masks logits; top_k, top_p, min_p, stop and seed change no argmax", () => {
    expect(greedyRequest({ temperature: 0 })).toBe(true);
    expect(greedyRequest({ temperature: 0, top_k: 5, top_p: 0.5, min_p: 0.1, stop: ["x"], seed: 3 } as { temperature: number })).toBe(true);
  });

  it.each([
    ["temperature", { temperature: 0.7 }],
    ["logit_bias", { temperature: 0, logit_bias: { "5": 10 } }],
    ["presence_penalty", { temperature: 0, presence_penalty: 0.5 }],
    ["frequency_penalty", { temperature: 0, frequency_penalty: 0.5 }],
    ["repetition_penalty", { temperature: 0, repetition_penalty: 1.1 }],
    ["response_format", { temperature: 0, response_format: { type: "json_object" } }],
    ["tools", { temperature: 0, tools: [] }],
  ])("not with %s", (_field, request) => {
    expect(greedyRequest(request)).toBe(false);
  });
});

describe("§2 sequentialVerdict: 3 suspects in a provider's last 10 audits is a fail", () => {
  const S: AuditVerdict = "suspect";
  const P: AuditVerdict = "pass";
  it("the third suspect within the window fails; the first two stay suspect; a pass stays a pass", () => {
    expect(sequentialVerdict([], S)).toBe("suspect");
    expect(sequentialVerdict([S], S)).toBe("suspect");
    expect(sequentialVerdict([S, P, P, P, P, P, P, P, S], S)).toBe("fail");
    expect(sequentialVerdict([S, S], P)).toBe("pass");
  });

  it("suspects older than the last 10 audits do not count", () => {
    expect(sequentialVerdict([S, S, P, P, P, P, P, P, P, P], S)).toBe("suspect");
    expect(sequentialVerdict([S, S, S, P, P, P, P, P, P, P, P, S], S)).toBe("suspect");
  });
});
