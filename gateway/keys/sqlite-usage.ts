// The key store's per-day usage table in SQLite: one row per (UTC day, key, provider), added to in batches
// and read back for a window of days. Kept apart from sqlite-store.ts, which owns keys, users and sessions.
import type { DailyUsage } from "./key-store.ts";
import { transaction, type SqlDatabase, type SqlStatement, type SqlValue } from "./sqlite-driver.ts";

/** The schema step that adds the table; sqlite-store.ts runs it as one of its migrations. */
export const USAGE_MIGRATION = `CREATE TABLE usage_days (
     day TEXT NOT NULL,
     key_id TEXT NOT NULL,
     provider_id TEXT NOT NULL,
     requests INTEGER NOT NULL DEFAULT 0,
     prompt_tokens INTEGER NOT NULL DEFAULT 0,
     completion_tokens INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (day, key_id, provider_id)
   ) WITHOUT ROWID;
   CREATE INDEX usage_days_by_key ON usage_days (key_id, day);`;
// no foreign key to api_keys: operator keys (op_…) are counted too and have no row there

const COLUMNS = `day, key_id AS keyId, provider_id AS providerId, requests, prompt_tokens AS promptTokens,
  completion_tokens AS completionTokens`;

type Sql = <P extends SqlValue[] = SqlValue[], R = unknown>(text: string) => SqlStatement<P, R>;

export class SqliteUsage {
  constructor(
    private readonly db: SqlDatabase,
    /** The store's statement cache. */
    private readonly sql: Sql,
  ) {}

  record(batch: readonly DailyUsage[]): void {
    const add = this.sql(
      `INSERT INTO usage_days (day, key_id, provider_id, requests, prompt_tokens, completion_tokens) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (day, key_id, provider_id) DO UPDATE SET requests = requests + excluded.requests,
         prompt_tokens = prompt_tokens + excluded.prompt_tokens, completion_tokens = completion_tokens + excluded.completion_tokens`,
    );
    transaction(this.db, () => {
      for (const u of batch) add.run(u.day, u.keyId, u.providerId, u.requests, u.promptTokens, u.completionTokens);
    });
  }

  since(sinceDay: string, userId?: number): DailyUsage[] {
    if (userId === undefined) {
      return this.sql<[string], DailyUsage>(`SELECT ${COLUMNS} FROM usage_days WHERE day >= ? ORDER BY day, key_id, provider_id`).all(sinceDay);
    }
    // the owner check lives in the query, as for every other per-user read
    return this.sql<[string, number], DailyUsage>(
        `SELECT ${COLUMNS} FROM usage_days WHERE day >= ? AND key_id IN (SELECT id FROM api_keys WHERE user_id = ?)
         ORDER BY day, key_id, provider_id`,
      )
      .all(sinceDay, userId);
  }
}
