// The statistic candidates an audit compares a provider's signed logprobs with the reference's by (issue 43 item 2),
// token by token; bench/audit-measure.ts measures each on honest providers and substitutes, and thresholds.ts keeps
// the one chosen. Portable: the auditor and anyone re-checking an audit run the same code.
import type { TokenLogprob } from "../receipt/logprobs.ts";
import type { ReferencePosition } from "./position.ts";

/** Below this both sides call a token impossible, so their difference says nothing (-9999 against -95, say). */
const NEGLIGIBLE = -80;
/** One position's difference counts up to this many nats: a single absurd value must not outweigh the rest. */
const CAP = 20;
/**
 * A greedy answer's token that is not the reference's most likely by more than this is a violation. An honest token
 * was its provider's argmax, so the reference can prefer another by at most two tokens' honest noise (each up to
 * 6.2e-3 in the committed measurement); this is 3× that (test/unit/src/audit/thresholds.test.ts).
 */
export const GREEDY_GAP = 0.04;

export interface AuditStatistic {
  /** Answer positions compared. */
  n: number;
  /** |claimed − reference| of the provider's tokens: mean, 95th percentile and largest (nats). */
  mean: number;
  p95: number;
  max: number;
  /** The mean signed difference (claimed − reference): made-up values that lean one way show here. */
  bias: number;
  /** |claimed − reference| over the listed alternatives too (equals `mean` when none are listed). */
  meanListed: number;
  /** Positions where the token is not the reference's most likely by more than GREEDY_GAP (for greedy requests). */
  greedyViolations: number;
}

const difference = (claimed: number, reference: number): number =>
  claimed < NEGLIGIBLE && reference < NEGLIGIBLE ? 0 : Math.min(CAP, Math.abs(claimed - reference));

/** Compares the provider's entries with the reference positions for the same tokens (same length and ids, or throws). */
export function auditStatistic(claimed: readonly TokenLogprob[], reference: readonly ReferencePosition[]): AuditStatistic {
  if (claimed.length !== reference.length) throw new Error(`${claimed.length} logprob entries against ${reference.length} reference positions`);
  const chosen: number[] = [];
  const listed: number[] = [];
  let signed = 0;
  let greedyViolations = 0;
  claimed.forEach((entry, t) => {
    const position = reference[t]!;
    if (position.id !== entry.id) throw new Error(`position ${t}: entry for token ${entry.id}, reference for ${position.id}`);
    const d = difference(entry.logprob, position.ref);
    chosen.push(d);
    listed.push(d);
    signed += Math.max(-CAP, Math.min(CAP, entry.logprob - position.ref));
    const referenceOf = new Map(position.top);
    for (const alternative of entry.top_logprobs) {
      const exact = referenceOf.get(alternative.id);
      if (exact !== undefined) listed.push(difference(alternative.logprob, exact));
      // outside the reference's own top list its value is at most the list's last: only a claim above that differs
      else if (position.top.length > 0) listed.push(Math.min(CAP, Math.max(0, alternative.logprob - position.top.at(-1)![1])));
    }
    const best = position.top[0];
    if (best !== undefined && best[0] !== entry.id && best[1] - position.ref > GREEDY_GAP) greedyViolations++;
  });
  const n = chosen.length;
  const sorted = [...chosen].sort((a, b) => a - b);
  const mean = (values: number[]) => (values.length === 0 ? 0 : values.reduce((s, v) => s + v, 0) / values.length);
  return {
    n,
    mean: mean(chosen),
    p95: n === 0 ? 0 : sorted[Math.min(n - 1, Math.ceil(0.95 * n) - 1)]!,
    max: n === 0 ? 0 : sorted[n - 1]!,
    bias: n === 0 ? 0 : signed / n,
    meanListed: mean(listed),
    greedyViolations,
  };
}
