// What a judged audit leaves (issue 43 item 4, AUDIT-DESIGN §5): its row in the store every replica reads, and for a
// failure the evidence anyone can re-check with the pinned GGUF: the sealed request, the answer as relayed and the
// provider's receipt over both, the reference, the statistic and the verdict, signed with the audit key
// (src/audit/evidence.ts). The row of a failure names the identities it bars, so every replica bars the same ones.
// A fail by the sequential rule alone (the third suspect among the last 10) has none: no one audit proves it, and the
// suspects' own evidence is not published; its row says so (reason "sequential").
import type { Logger } from "pino";
import { buildEvidence, evidenceSha256 } from "../../src/audit/evidence.ts";
import { auditVerdict } from "../../src/audit/thresholds.ts";
import type { Catalog } from "../../src/catalog.ts";
import type { Signer } from "../../src/crypto/signing.ts";
import { faultIdentities, type FaultSubject } from "../directory/provider-faults.ts";
import type { AuditReason, AuditStore, NewAudit } from "../keys/audit-store.ts";
import { AUDIT_BATCH_SIZE, type JudgedAudit } from "./auditor.ts";

/** A store write that fails is tried this many times in all: until the store has a failure's row only this gateway bars. */
const ADD_ATTEMPTS = 4;
const ADD_RETRY_MS = 1_000;

export interface KeepParts {
  store: AuditStore;
  /** The audit key. */
  signer: Signer;
  catalog: Catalog;
  /** This gateway's package version, recorded as the auditor's build. */
  build: string;
  /** The reference pass's threads (`--audit-threads`). */
  threads: number;
  /** Provider `id` as the directory lists it: the enrollment and device its failure is charged to. */
  subjectOf: (id: string) => FaultSubject;
  /** Tells the other replicas to read the store now (on NATS); a hint, never the bar itself. */
  share?: (auditId: string) => void;
  log: Logger;
  /** The wait before a failed store write is tried again (ADD_RETRY_MS, doubled each time). */
  retryMs?: number;
}

export function auditKeeper(parts: KeepParts): (audit: JudgedAudit) => Promise<{ evidenceSha256: string | null }> {
  return async (audit) => {
    const subject = parts.subjectOf(audit.provider);
    const made = audit.verdict === "fail" ? failureEvidence(parts, audit, subject) : undefined;
    const evidence = typeof made === "object" ? made : undefined;
    const text = evidence && JSON.stringify(evidence);
    const sha = evidence ? evidenceSha256(evidence) : null;
    const bars = audit.verdict === "fail" ? faultIdentities(subject) : [];
    const row = { id: audit.id, provider: audit.provider, verdict: audit.verdict, at: audit.at, bars, evidenceSha256: sha, ...(typeof made === "string" ? { reason: made } : {}) };
    await addWithRetries(parts, audit.id, row, text);
    parts.share?.(audit.id);
    return { evidenceSha256: sha };
  };
}

/** Writes the row, again after a failed write (a store away a moment); throws the last error once out of attempts. */
async function addWithRetries(parts: KeepParts, id: string, row: NewAudit, evidence: string | undefined): Promise<void> {
  for (let attempt = 1, wait = parts.retryMs ?? ADD_RETRY_MS; ; attempt++, wait *= 2) {
    try {
      return await parts.store.add(row, evidence);
    } catch (err) {
      if (attempt >= ADD_ATTEMPTS) throw err;
      parts.log.warn({ audit: id, err: (err as Error).message, attempt }, `audit ${id}: the store did not take its row; trying again`);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/**
 * The signed evidence of a failure; "sequential" when the audit alone is a suspect (so the auditor's sequential rule
 * made the fail); undefined (logged) when it cannot be made. The bar stands either way.
 */
function failureEvidence(parts: KeepParts, audit: JudgedAudit, subject: FaultSubject): ReturnType<typeof buildEvidence> | AuditReason | undefined {
  const { session, result } = audit;
  const entry = parts.catalog.models.find((m) => m.alias === audit.alias);
  const why = result.engine === undefined ? "the rescorer named no engine" : entry === undefined ? `${audit.alias} is not in the catalog` : undefined;
  if (why !== undefined || entry === undefined || result.engine === undefined) {
    parts.log.error({ audit: audit.id, provider: audit.provider }, `audit ${audit.id}: no evidence kept: ${why}`);
    return undefined;
  }
  const { receipt } = session;
  const evidence = buildEvidence(
    {
      id: audit.id,
      created: Math.floor(audit.at / 1000),
      auditor: { build: parts.build, engine: { ...result.engine, threads: parts.threads, batch_size: AUDIT_BATCH_SIZE } },
      provider: {
        id: audit.provider,
        trust_level: receipt.trust_level,
        ...(receipt.serial === undefined ? {} : { serial: receipt.serial }),
        ...(subject.enrollment === undefined ? {} : { enrollment: subject.enrollment }),
      },
      model: { alias: entry.alias, hub_id: entry.hub_id, revision: entry.revision, sha256: entry.sha256 },
      request: audit.request,
      answer: session.pieces,
      receipt,
      reference: { prompt_tokens: result.prompt_tokens, positions: result.positions },
    },
    parts.signer,
  );
  // the file's own verdict is what anyone re-checking gets: only a failure it states is published against the provider
  if (evidence.verdict !== "fail" && auditVerdict(evidence.statistic) === "suspect") return "sequential";
  if (evidence.verdict !== "fail") {
    parts.log.error({ audit: audit.id, provider: audit.provider, verdict: evidence.verdict }, `audit ${audit.id}: the evidence says ${evidence.verdict}, not fail; none kept`);
    return undefined;
  }
  return evidence;
}
