// The PostgreSQL key store's usage (postgres-store.ts): per-key totals and the per-day rows per key and provider,
// added to in batches by whichever gateway served the requests, so each is counted once, and read back for a window.
import type { DailyUsage, KeyActivity } from "./key-store.ts";
import type { PostgresPool } from "./postgres-pool.ts";

const USAGE_COLUMNS = `day, key_id AS "keyId", provider_id AS "providerId", requests, prompt_tokens AS "promptTokens",
  completion_tokens AS "completionTokens"`;

export class PostgresUsage {
  constructor(private readonly pool: PostgresPool) {}

  async recordActivity(batch: ReadonlyMap<string, KeyActivity>): Promise<void> {
    await this.pool.transaction(async (query) => {
      for (const [keyId, a] of batch) {
        await query(
          `UPDATE api_keys SET last_used_at = GREATEST(COALESCE(last_used_at, 0), $1), requests = requests + $2,
             prompt_tokens = prompt_tokens + $3, completion_tokens = completion_tokens + $4 WHERE id = $5`,
          [a.lastUsedAt, a.requests, a.promptTokens, a.completionTokens, keyId],
        );
      }
    });
  }

  async recordDailyUsage(batch: readonly DailyUsage[]): Promise<void> {
    await this.pool.transaction(async (query) => {
      for (const u of batch) {
        await query(
          `INSERT INTO usage_days (day, key_id, provider_id, requests, prompt_tokens, completion_tokens) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (day, key_id, provider_id) DO UPDATE SET requests = usage_days.requests + excluded.requests,
             prompt_tokens = usage_days.prompt_tokens + excluded.prompt_tokens, completion_tokens = usage_days.completion_tokens + excluded.completion_tokens`,
          [u.day, u.keyId, u.providerId, u.requests, u.promptTokens, u.completionTokens],
        );
      }
    });
  }

  async dailyUsage(sinceDay: string, userId?: number): Promise<DailyUsage[]> {
    if (userId === undefined) return this.pool.query<DailyUsage>(`SELECT ${USAGE_COLUMNS} FROM usage_days WHERE day >= $1 ORDER BY day, key_id, provider_id`, [sinceDay]);
    return this.pool.query<DailyUsage>(
      `SELECT ${USAGE_COLUMNS} FROM usage_days WHERE day >= $1 AND key_id IN (SELECT id FROM api_keys WHERE user_id = $2)
       ORDER BY day, key_id, provider_id`,
      [sinceDay, userId],
    );
  }
}
