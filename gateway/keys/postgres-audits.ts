// The audits table on PostgreSQL (audit-store.ts): every replica's auditor writes here and every replica reads the
// bars and records back, so one failure bars a provider everywhere. A failure's evidence is kept in its row.
import { AUDIT_ID, type AuditStore, type NewAudit, type StoredAudit } from "./audit-store.ts";

/** The schema step that adds the table; postgres-schema.ts runs it as one of its migrations. */
export const AUDITS_MIGRATION = `CREATE TABLE audits (
     id TEXT PRIMARY KEY,
     provider TEXT NOT NULL,
     verdict TEXT NOT NULL,
     at BIGINT NOT NULL,
     bars JSONB NOT NULL,
     evidence_sha256 TEXT,
     evidence TEXT,
     cleared_at BIGINT
   );
   CREATE INDEX audits_by_time ON audits (at);
   CREATE INDEX audits_barring ON audits (id) WHERE verdict = 'fail' AND cleared_at IS NULL;`;

/** The step after: why a failure has no evidence (audit-store.ts AuditReason). */
export const AUDIT_REASON_MIGRATION = "ALTER TABLE audits ADD COLUMN reason TEXT;";

const COLUMNS = `id, provider, verdict, at, bars, evidence_sha256 AS "evidenceSha256", cleared_at AS "clearedAt", reason`;

/** The store's pool's query (a function, so the schema, which holds this table's migration, imports no pool). */
type Query = <R extends object>(text: string, params?: unknown[]) => Promise<R[]>;

export class PostgresAudits implements AuditStore {
  private readonly pool: { query: Query };

  constructor(query: Query) {
    this.pool = { query };
  }

  async add(audit: NewAudit, evidence?: string): Promise<void> {
    await this.pool.query("INSERT INTO audits (id, provider, verdict, at, bars, evidence_sha256, evidence, reason) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING", [
      audit.id, audit.provider, audit.verdict, audit.at, JSON.stringify(audit.bars), audit.evidenceSha256, evidence ?? null, audit.reason ?? null,
    ]);
  }

  async since(since: number): Promise<StoredAudit[]> {
    return this.pool.query<StoredAudit>(`SELECT ${COLUMNS} FROM audits WHERE at >= $1 ORDER BY at, id`, [since]);
  }

  async bars(): Promise<StoredAudit[]> {
    return this.pool.query<StoredAudit>(`SELECT ${COLUMNS} FROM audits WHERE verdict = 'fail' AND cleared_at IS NULL ORDER BY at, id`);
  }

  async evidence(id: string): Promise<string | undefined> {
    if (!AUDIT_ID.test(id)) return undefined;
    const [row] = await this.pool.query<{ evidence: string | null }>("SELECT evidence FROM audits WHERE id = $1 AND verdict = 'fail'", [id]);
    return row?.evidence ?? undefined;
  }

  async clear(id: string, now = Date.now()): Promise<StoredAudit | undefined> {
    await this.pool.query("UPDATE audits SET cleared_at = $1 WHERE id = $2 AND verdict = 'fail' AND cleared_at IS NULL", [now, id]);
    const [row] = await this.pool.query<StoredAudit>(`SELECT ${COLUMNS} FROM audits WHERE id = $1 AND verdict = 'fail'`, [id]);
    return row;
  }
}
