// Each provider's audit record as the listings show it (issue 43 item 4, AUDIT-DESIGN §5 "Records"): audits passed,
// suspect and failed, the last one, and each failure's evidence. Every replica's auditor writes its audits to the
// store (gateway/keys/audit-store.ts) and every replica folds the store's rows in here (audit-poll.ts), so all of them
// show the same counts; noting an audit twice (this replica's own, then read back) counts it once.
import { BoundedMap } from "../../src/bounded-map.ts";
import type { StoredVerdict } from "../keys/audit-store.ts";

export type AuditOutcome = StoredVerdict;

export interface AuditRecord {
  passed: number;
  failed: number;
  /** Audits between the honest noise and a fail (i43's sequential rule makes a fail of enough of them): never barring. */
  suspect: number;
  /** Failures no operator has cleared (`svc-gateway audit clear`): while above 0 the provider is barred. */
  barring: number;
  last: { id: string; at: number; verdict: AuditOutcome } | null;
}

/** A failure as the attestation record lists it: where its public evidence is, and the digest that names it. */
export interface AuditFailure {
  id: string;
  at: number;
  evidence_sha256: string;
  url: string;
}

/** How many providers' records are kept: past it the one audited longest ago is forgotten. */
const MAX_PROVIDERS = 10_000;
/** A provider's failures listed, newest kept. */
export const MAX_FAILURES_LISTED = 20;

/** The public URL of failure `id`'s evidence (gateway/audit/routes.ts). */
export const evidenceUrl = (id: string): string => `/v1/audits/${id}`;

export class AuditRecords {
  private readonly records = new BoundedMap<string, Omit<AuditRecord, "barring"> & { failures: AuditFailure[] }>(MAX_PROVIDERS);
  /** Audits counted, with when they were concluded (ms), until they are older than anything the store is asked again for. */
  private readonly seen = new Map<string, number>();
  /** Each provider's failures not cleared, as the store last showed them (plus this gateway's own since). */
  private barring = new Map<string, number>();
  /** Audits that ended without a verdict (an error, the provider gone, no rescorer): counted apart, never charged. */
  noVerdict = 0;

  /** Counts audit `id` of `provider`, concluded at `at` (Unix seconds); an id counted already is not counted again. */
  note(provider: string, id: string, verdict: AuditOutcome, at: number, evidenceSha256?: string | null): void {
    if (this.seen.has(id)) return;
    this.seen.set(id, at * 1000);
    const record = this.records.get(provider) ?? { passed: 0, failed: 0, suspect: 0, last: null, failures: [] };
    if (verdict === "pass") record.passed++;
    else if (verdict === "suspect") record.suspect++;
    else {
      record.failed++;
      // counted as barring until the store shows otherwise: its rows are read after this one is noted (audit-poll.ts)
      this.barring.set(provider, (this.barring.get(provider) ?? 0) + 1);
    }
    // rows of other replicas arrive late: the last is the latest concluded
    if (record.last === null || at >= record.last.at) record.last = { id, at, verdict };
    if (verdict === "fail" && evidenceSha256) {
      record.failures.push({ id, at, evidence_sha256: evidenceSha256, url: evidenceUrl(id) });
      record.failures.sort((a, b) => a.at - b.at);
      if (record.failures.length > MAX_FAILURES_LISTED) record.failures.shift();
    }
    this.records.set(provider, record);
  }

  /** Takes the store's failures not cleared (`AuditStore.bars`) as each provider's barring count: a clear lifts it. */
  syncBarring(uncleared: Iterable<{ provider: string }>): void {
    const barring = new Map<string, number>();
    for (const row of uncleared) barring.set(row.provider, (barring.get(row.provider) ?? 0) + 1);
    this.barring = barring;
  }

  /** Forgets which audits concluded before `ms` were counted: the store is not asked for them again. */
  forgetSeenBefore(ms: number): void {
    for (const [id, at] of this.seen) if (at < ms) this.seen.delete(id);
  }

  /** The record of `provider`; zeros when it was never audited. */
  of(provider: string): AuditRecord {
    const record = this.records.get(provider);
    const barring = this.barring.get(provider) ?? 0;
    if (record === undefined) return { passed: 0, failed: 0, suspect: 0, barring, last: null };
    const { failures: _, ...counts } = record;
    return { ...counts, barring, last: counts.last && { ...counts.last } };
  }

  /** The failures of `provider` whose evidence is kept, oldest first. */
  failures(provider: string): AuditFailure[] {
    return [...(this.records.get(provider)?.failures ?? [])];
  }
}
