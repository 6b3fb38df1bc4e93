// The audits a gateway's auditor concluded, in the key store every replica shares (issue 43 item 4, AUDIT-DESIGN §5
// "Replicas"): one row per audit with a verdict, so every replica counts the same records, and a failure's row is the
// bar itself: what it bars (the enrollment and device it is charged to) and, until an operator clears it, that it does.
// A failure keeps its signed evidence (src/audit/evidence.ts), served publicly; a pass keeps none (it would leak the corpus).

/** Verdicts a stored audit has: a mismatch or an audit without a verdict charges no one and is not stored. */
export const STORED_VERDICTS = ["pass", "suspect", "fail"] as const;
export type StoredVerdict = (typeof STORED_VERDICTS)[number];

/** An audit id as the auditor makes it: the only shape a row, a file name or a URL takes. */
export const AUDIT_ID = /^aud_[0-9a-f]{24}$/;

/** The one reason a failure is kept without public evidence (AUDIT-DESIGN §5, docs/security.md). */
export type AuditReason = "sequential";

export interface StoredAudit {
  id: string;
  provider: string;
  verdict: StoredVerdict;
  /** When it was concluded, ms since the epoch. */
  at: number;
  /** A failure's: the fault identities it bars (gateway/directory/provider-faults.ts); empty for the others. */
  bars: string[];
  /** A failure's: the SHA-256 of its evidence's canonical form; null for the others. */
  evidenceSha256: string | null;
  /** Why a failure bars without evidence: "sequential" (the third suspect of the last 10, which no one audit proves); else null. */
  reason: AuditReason | null;
  /** When an operator cleared a failure's bar (`svc-gateway audit clear`), ms; null while it bars. */
  clearedAt: number | null;
}

/** A row as the auditor adds it: not cleared, and without a reason unless it has one. */
export type NewAudit = Omit<StoredAudit, "clearedAt" | "reason"> & { reason?: AuditReason };

export interface AuditStore {
  /** Records a concluded audit, with a failure's evidence (its JSON text); an id stored already is left as it is. */
  add(audit: NewAudit, evidence?: string): Promise<void>;
  /** Audits concluded or cleared at or after `since` (ms), oldest first. */
  since(since: number): Promise<StoredAudit[]>;
  /** Every failure not cleared: the bars every replica applies. */
  bars(): Promise<StoredAudit[]>;
  /** The evidence of failure `id`, as stored; undefined when there is none. */
  evidence(id: string): Promise<string | undefined>;
  /** Clears failure `id`'s bar at `now`; the row as it now is, or undefined when no failure has that id. */
  clear(id: string, now?: number): Promise<StoredAudit | undefined>;
}
