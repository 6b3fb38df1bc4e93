// Each provider's audit record as this gateway keeps it (issue 43 item 2, design §5 "Records"): audits passed and
// failed, and the last one, shown on GET /v1/providers and the attestation record. In memory, per gateway: passing
// audits are never published (that would leak the corpus), and a failure's bar lives in provider-faults.ts.

export type AuditOutcome = "pass" | "fail";

export interface AuditRecord {
  passed: number;
  failed: number;
  last: { id: string; at: number; verdict: AuditOutcome } | null;
}

/** How many providers' records are kept: past it the one audited longest ago is forgotten. */
const MAX_PROVIDERS = 10_000;

export class AuditRecords {
  private readonly records = new Map<string, AuditRecord>();
  /** Audits that ended without a verdict (an error, the provider gone, no rescorer): counted apart, never charged. */
  noVerdict = 0;

  /** A suspect (src/audit/thresholds.ts) is not counted or shown here: the listing's schema knows passes and fails. */
  note(provider: string, id: string, verdict: AuditOutcome | "suspect", at: number): void {
    if (verdict === "suspect") return;
    const record = this.of(provider);
    if (verdict === "pass") record.passed++;
    else record.failed++;
    record.last = { id, at, verdict };
    this.records.delete(provider);
    this.records.set(provider, record);
    if (this.records.size > MAX_PROVIDERS) this.records.delete(this.records.keys().next().value!);
  }

  /** The record of `provider`; zeros when it was never audited here. */
  of(provider: string): AuditRecord {
    return this.records.get(provider) ?? { passed: 0, failed: 0, last: null };
  }
}
