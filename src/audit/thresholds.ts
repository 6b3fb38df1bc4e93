// The audit's verdict on one answer (issue 43 item 2), by the statistic bench/audit-measure.ts chose: the mean
// |claimed − reference| logprob of the provider's tokens. The figures are the tiny model's, measured on CPU; a real
// model's are calibrated the same way before they are trusted (docs/security.md).
import type { AuditStatistic } from "./statistic.ts";

/**
 * Above this mean difference (nats) an answer fails: the geometric mean of 3 × the largest honest audit (9.6e-4) and
 * the weakest substitute's smallest (9.8e-3, logprobs made up ±0.01), rounded down (bench/README.md "Audit statistic").
 */
export const AUDIT_FAIL_MEAN = 5e-3;

export type AuditVerdict = "pass" | "fail";

export function auditVerdict(statistic: Pick<AuditStatistic, "mean">): AuditVerdict {
  return statistic.mean > AUDIT_FAIL_MEAN ? "fail" : "pass";
}
