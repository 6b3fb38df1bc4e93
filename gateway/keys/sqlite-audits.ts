// The audits table in SQLite (audit-store.ts), beside the keys in keys.sqlite: rows for every concluded audit, and
// each failure's evidence as `<data-dir>/audits/ID.json` (0600), so an operator can hand the file on as it is.
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "../../src/process/file-modes.ts";
import { makeDirs } from "../../src/process/make-dir.ts";
import { AUDIT_ID, type AuditStore, type NewAudit, type StoredAudit } from "./audit-store.ts";
import type { SqlStatement, SqlValue } from "./sqlite-driver.ts";

/** The schema step that adds the table; sqlite-schema.ts runs it as one of its migrations. */
export const AUDITS_MIGRATION = `CREATE TABLE IF NOT EXISTS audits (
     id TEXT PRIMARY KEY,
     provider TEXT NOT NULL,
     verdict TEXT NOT NULL,
     at INTEGER NOT NULL,
     bars TEXT NOT NULL,
     evidence_sha256 TEXT,
     cleared_at INTEGER
   );
   CREATE INDEX IF NOT EXISTS audits_by_time ON audits (at);
   CREATE INDEX IF NOT EXISTS audits_barring ON audits (id) WHERE verdict = 'fail' AND cleared_at IS NULL;`;

/** The step after: why a failure has no evidence (audit-store.ts AuditReason). */
export const AUDIT_REASON_MIGRATION = "ALTER TABLE audits ADD COLUMN reason TEXT;";

/** Where failures' evidence files live in the data dir. */
export const EVIDENCE_DIR = "audits";

const COLUMNS = "id, provider, verdict, at, bars, evidence_sha256 AS evidenceSha256, cleared_at AS clearedAt, reason";
type Row = Omit<StoredAudit, "bars"> & { bars: string };
const stored = (row: Row): StoredAudit => ({ ...row, bars: JSON.parse(row.bars) as string[] });

type Sql = <P extends SqlValue[] = SqlValue[], R = unknown>(text: string) => SqlStatement<P, R>;

export class SqliteAudits implements AuditStore {
  constructor(
    private readonly dataDir: string,
    /** The store's statement cache. */
    private readonly sql: Sql,
  ) {}

  async add(audit: NewAudit, evidence?: string): Promise<void> {
    if (evidence !== undefined) {
      if (!AUDIT_ID.test(audit.id)) throw new Error(`${audit.id} is not an audit id`);
      // whole or absent: written aside, then renamed into place before the row that points at it
      const dir = join(this.dataDir, EVIDENCE_DIR);
      makeDirs(dir, PRIVATE_DIR_MODE);
      const path = join(dir, `${audit.id}.json`);
      writeFileSync(`${path}.tmp`, evidence, { mode: PRIVATE_FILE_MODE });
      renameSync(`${path}.tmp`, path);
    }
    this.sql("INSERT INTO audits (id, provider, verdict, at, bars, evidence_sha256, reason) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING")
      .run(audit.id, audit.provider, audit.verdict, audit.at, JSON.stringify(audit.bars), audit.evidenceSha256, audit.reason ?? null);
  }

  async since(since: number): Promise<StoredAudit[]> {
    return this.sql<[number], Row>(`SELECT ${COLUMNS} FROM audits WHERE at >= ? ORDER BY at, id`).all(since).map(stored);
  }

  async bars(): Promise<StoredAudit[]> {
    return this.sql<[], Row>(`SELECT ${COLUMNS} FROM audits WHERE verdict = 'fail' AND cleared_at IS NULL ORDER BY at, id`).all().map(stored);
  }

  async evidence(id: string): Promise<string | undefined> {
    if (!AUDIT_ID.test(id)) return undefined;
    const row = this.sql<[string], { id: string }>("SELECT id FROM audits WHERE id = ? AND verdict = 'fail'").get(id);
    if (row === undefined) return undefined;
    try {
      return readFileSync(join(this.dataDir, EVIDENCE_DIR, `${id}.json`), "utf8");
    } catch {
      return undefined;
    }
  }

  async clear(id: string, now = Date.now()): Promise<StoredAudit | undefined> {
    this.sql("UPDATE audits SET cleared_at = ? WHERE id = ? AND verdict = 'fail' AND cleared_at IS NULL").run(now, id);
    const row = this.sql<[string], Row>(`SELECT ${COLUMNS} FROM audits WHERE id = ? AND verdict = 'fail'`).get(id);
    return row === undefined ? undefined : stored(row);
  }
}
