// The comparison an audit makes (issue 43 item 2), on hand-made distributions: the reference reduced at the provider's
// token, and the statistic candidates over an answer's positions.
import { describe, expect, it } from "vitest";
import { referencePosition } from "../../../../src/audit/position.ts";
import { auditStatistic } from "../../../../src/audit/statistic.ts";
import { AUDIT_FAIL_MEAN, auditVerdict } from "../../../../src/audit/thresholds.ts";
import type { TokenLogprob } from "../../../../src/receipt/logprobs.ts";

const entry = (id: number, logprob: number, top: [number, number][] = []): TokenLogprob => ({
  id,
  token: "x",
  bytes: [120],
  logprob,
  top_logprobs: top.map(([alt, lp]) => ({ id: alt, token: "x", bytes: [120], logprob: lp })),
});

describe("referencePosition: one answer position of the reference pass", () => {
  it("the token's log probability and the k most likely, most likely first; a token of probability 0 is -9999", () => {
    const p = referencePosition([[0, 0.1], [1, 0.6], [2, 0.3], [3, 0]], 2, 2);
    expect(p.ref).toBeCloseTo(Math.log(0.3), 12);
    expect(p.top).toEqual([[1, Math.log(0.6)], [2, Math.log(0.3)]]);
    expect(referencePosition([[0, 1], [3, 0]], 3, 1).ref).toBe(-9999);
  });
});

describe("auditStatistic: claimed against reference, token by token", () => {
  const reference = [referencePosition([[0, 0.5], [1, 0.5]], 0, 2), referencePosition([[0, 0.9], [1, 0.1]], 1, 2)];

  it("the honest values give zero; a shift shows in mean, max and bias", () => {
    const honest = [entry(0, Math.log(0.5)), entry(1, Math.log(0.1))];
    expect(auditStatistic(honest, reference)).toMatchObject({ n: 2, mean: 0, max: 0, bias: 0, greedyViolations: 1 });
    const shifted = auditStatistic([entry(0, Math.log(0.5) - 0.2), entry(1, Math.log(0.1))], reference);
    expect([shifted.mean, shifted.max, shifted.bias]).toEqual([expect.closeTo(0.1, 12), expect.closeTo(0.2, 12), expect.closeTo(-0.1, 12)]);
    expect(auditVerdict(shifted)).toBe("fail");
    expect(auditVerdict(auditStatistic(honest, reference))).toBe("pass");
  });

  it("listed alternatives count in meanListed: an exact one by its difference, one outside the reference's list only above its last", () => {
    const position = [referencePosition([[0, 0.7], [1, 0.2], [2, 0.1]], 0, 2)];
    const claims = auditStatistic([entry(0, Math.log(0.7), [[0, Math.log(0.7)], [2, Math.log(0.2) + 0.3]])], position);
    expect(claims.mean).toBe(0);
    expect(claims.meanListed).toBeCloseTo(0.3 / 3, 12);
  });

  it("both sides below -80 count as equal; one absurd value is capped at 20 nats", () => {
    const tail = [referencePosition([[0, 1], [1, 0]], 1, 1)];
    expect(auditStatistic([entry(1, -95)], tail).mean).toBe(0);
    const absurd = [referencePosition([[0, 0.5], [1, 0.5]], 1, 1)];
    expect(auditStatistic([entry(1, -9999)], absurd).mean).toBe(20);
  });

  it("entries for other tokens than the reference's, or another count, are refused rather than compared", () => {
    expect(() => auditStatistic([entry(1, 0)], [referencePosition([[0, 1]], 0, 1)])).toThrow(/token 1/);
    expect(() => auditStatistic([], reference)).toThrow(/0 logprob entries/);
  });

  it("the threshold is a small positive number of nats", () => {
    expect(AUDIT_FAIL_MEAN).toBeGreaterThan(0);
    expect(AUDIT_FAIL_MEAN).toBeLessThan(0.05);
  });
});
