// The audit's verdict on one answer (issue 43 item 2, AUDIT-DESIGN §2), by the statistic bench/audit-measure.ts chose:
// the mean |claimed − reference| logprob of the provider's tokens, and for a greedy request whether each token is the
// reference's most likely. The figures are the tiny model's, measured on CPU; a real model's are calibrated the same
// way before they are trusted (docs/security.md). test/unit/src/audit/thresholds.test.ts holds them to the committed
// measurement (bench/results/audit-measure.json), so that no one edits one without measuring again.
import type { AuditStatistic } from "./statistic.ts";

/**
 * The largest honest audit's mean in the threshold's measurement (audit-measure.json: 128 audits, threads × batch ×
 * context), nats. The bench's later 504 honest audits reach 1.2e-3, still below 3× this (test/unit/bench/audit-results.test.ts).
 */
export const HONEST_MAX_MEAN = 9.6e-4;

/**
 * Above this mean difference (nats) an answer fails: the geometric mean of 3 × the largest honest audit (9.6e-4) and
 * the weakest substitute's smallest (9.8e-3, logprobs made up ±0.01), rounded down (bench/README.md "Audit statistic").
 */
export const AUDIT_FAIL_MEAN = 5e-3;

/** Above this mean, up to AUDIT_FAIL_MEAN, an answer is suspect: 3 × the largest honest audit (AUDIT-DESIGN §2). */
export const AUDIT_SUSPECT_MEAN = 3 * HONEST_MAX_MEAN;

export type AuditVerdict = "pass" | "suspect" | "fail";

/**
 * The verdict on one answer: fail above AUDIT_FAIL_MEAN, or when the request was greedy and a token is not the
 * reference's most likely (`greedyViolations`, given only for a greedy request: see `greedyRequest`); suspect above
 * AUDIT_SUSPECT_MEAN; else pass.
 */
export function auditVerdict(statistic: Pick<AuditStatistic, "mean">, greedyViolations?: number): AuditVerdict {
  if (statistic.mean > AUDIT_FAIL_MEAN || (greedyViolations ?? 0) > 0) return "fail";
  return statistic.mean > AUDIT_SUSPECT_MEAN ? "suspect" : "pass";
}

/** The sealed request's fields that decide whether its answer is the model's argmax at every token. */
export interface SamplingFields {
  temperature: number;
  logit_bias?: unknown;
  presence_penalty?: unknown;
  frequency_penalty?: unknown;
  repetition_penalty?: unknown;
  response_format?: unknown;
  tools?: unknown;
}

/**
 * Whether an honest provider's every token is the raw distribution's most likely: temperature 0 with nothing that
 * moves or masks logits first (logit_bias, penalties, a JSON grammar, tool-call grammars). Only then do greedy
 * violations prove a token was not drawn from the pinned model (AUDIT-DESIGN §2, S2).
 */
export function greedyRequest(request: SamplingFields): boolean {
  const { temperature, logit_bias, presence_penalty, frequency_penalty, repetition_penalty, response_format, tools } = request;
  return temperature === 0 && [logit_bias, presence_penalty, frequency_penalty, repetition_penalty, response_format, tools].every((field) => field === undefined);
}

/** Why a greedy answer with `violations` of its `n` tokens not the reference's most likely fails (the auditor's and the evidence's words). */
export const greedyReason = (violations: number, n: number): string => `${violations} of the greedy answer's ${n} tokens are not the reference's most likely`;

/** The sequential rule (AUDIT-DESIGN §2): this many suspects among a provider's last SUSPECT_WINDOW audits is a fail. */
export const SUSPECTS_TO_FAIL = 3;
export const SUSPECT_WINDOW = 10;

/**
 * The verdict of an audit in the light of the provider's earlier ones (`recent`, oldest first, any length): a suspect
 * that makes SUSPECTS_TO_FAIL among the last SUSPECT_WINDOW is a fail.
 */
export function sequentialVerdict(recent: readonly AuditVerdict[], verdict: AuditVerdict): AuditVerdict {
  if (verdict !== "suspect") return verdict;
  const window = [...recent.slice(-(SUSPECT_WINDOW - 1)), verdict];
  return window.filter((v) => v === "suspect").length >= SUSPECTS_TO_FAIL ? "fail" : verdict;
}
