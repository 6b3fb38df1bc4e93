// The KeyStore for replicas (DESIGN §7): PostgreSQL through `pg`, chosen by `--database postgres://…`. The same
// tables and hashing as SQLite; migrations run at open under an advisory lock; revocations reach every replica
// through LISTEN/NOTIFY (postgres-revocations.ts). While the database is away every call fails fast with
// 503 key_store_unavailable, which the request path only meets for a key not yet in its cache.
import pg from "pg";
import { ApiError } from "../../src/errors.ts";
import {
  KeyCapReached,
  OverridesByTable,
  type DailyUsage, type KeyActivity, type KeyLimits, type KeyListing, type KeyOwner, type KeyRecord, type KeyStore, type ProviderToken,
  type StoreRow, type StoreTable, type User, type UserClaims, type UserListing,
} from "./key-store.ts";
import type { LeaseSource } from "./budget-lease.ts";
import { PostgresBudgets } from "./postgres-budgets.ts";
import { migrate } from "./postgres-schema.ts";
import { RevocationListener } from "./postgres-revocations.ts";
import { displayPrefix, newKeyId, newSecret, PROVIDER_TOKEN_PREFIX, secretHash } from "./secret.ts";

const TOKEN_COLUMNS = `id, name, prefix, created_at AS "createdAt", expires_at AS "expiresAt", revoked_at AS "revokedAt",
  last_used_at AS "lastUsedAt"`;
const KEY_COLUMNS = `id, name, prefix, created_at AS "createdAt", last_used_at AS "lastUsedAt", revoked_at AS "revokedAt",
  requests, prompt_tokens AS "promptTokens", completion_tokens AS "completionTokens"`;
const LIMIT_COLUMNS = `max_concurrency AS "maxConcurrency", rpm, tpm`;
const LIMIT_COLUMN: Record<keyof KeyLimits, string> = { maxConcurrency: "max_concurrency", rpm: "rpm", tpm: "tpm" };
const USAGE_COLUMNS = `day, key_id AS "keyId", provider_id AS "providerId", requests, prompt_tokens AS "promptTokens",
  completion_tokens AS "completionTokens"`;

/** BIGINT columns (times in ms, counters) come back as numbers: every one of ours fits in 2^53. */
const TYPES = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === pg.types.builtins.INT8 ? Number : pg.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
};

/** How long a call waits for a connection before the database counts as away. */
const CONNECT_TIMEOUT_MS = 2_000;

/** A failure of the connection, not of the statement: the database is away (SQLSTATE classes 08, 53, 57P). */
export function isUnreachable(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" && /^(08|53|57P)/.test(code)) return true;
  return !(err instanceof pg.DatabaseError);
}

export const unavailable = () =>
  new ApiError("key_store_unavailable", "The gateway's key store (PostgreSQL) cannot be reached just now; keys already in use keep working; retry shortly.");

export class PostgresKeyStore extends OverridesByTable implements KeyStore {
  private listener: RevocationListener | undefined;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly url: string,
  ) {
    super();
  }

  /** Connects and migrates; throws the driver's error when the database cannot be reached or refuses us. */
  static async open(url: string, onError: (err: Error) => void = () => undefined): Promise<PostgresKeyStore> {
    const pool = new pg.Pool({ connectionString: url, max: 8, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, idleTimeoutMillis: 30_000, types: TYPES });
    // an idle connection dropped by a restarting server is reported here; without a listener it would end the process
    pool.on("error", onError);
    try {
      const client = await pool.connect();
      try {
        await migrate(client);
      } finally {
        client.release();
      }
    } catch (err) {
      await pool.end();
      throw err;
    }
    return new PostgresKeyStore(pool, url);
  }

  /** One statement; a lost connection becomes 503 key_store_unavailable, anything else stays itself. */
  private async query<R extends object = Record<string, unknown>>(text: string, params: unknown[] = []): Promise<R[]> {
    try {
      return (await this.pool.query<R>(text, params)).rows;
    } catch (err) {
      throw isUnreachable(err) ? unavailable() : err;
    }
  }

  /** Several statements in one transaction on one connection. */
  private async transaction<T>(body: (query: (text: string, params?: unknown[]) => Promise<Record<string, unknown>[]>) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch {
      throw unavailable();
    }
    try {
      await client.query("BEGIN");
      const result = await body(async (text, params = []) => (await client.query(text, params)).rows);
      await client.query("COMMIT");
      return result;
    } catch (err) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw err instanceof ApiError || err instanceof KeyCapReached || !isUnreachable(err) ? err : unavailable();
    } finally {
      client.release();
    }
  }

  async upsertUser(claims: UserClaims, now = Date.now()): Promise<number> {
    const [row] = await this.query<{ id: number }>(
      `INSERT INTO users (issuer, subject, email, name, created_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (issuer, subject) DO UPDATE SET email = excluded.email, name = excluded.name RETURNING id`,
      [claims.issuer, claims.subject, claims.email, claims.name, now],
    );
    return row!.id;
  }

  async createKey(userId: number, name: string, now = Date.now(), maxLiveKeys = Infinity): Promise<{ key: KeyRecord; secret: string }> {
    const secret = newSecret();
    const key: KeyRecord = { id: newKeyId(), name, prefix: displayPrefix(secret), createdAt: now, lastUsedAt: null, revokedAt: null, requests: 0, promptTokens: 0, completionTokens: 0 };
    await this.transaction(async (query) => {
      // the user's row is locked first, so two replicas counting at once cannot both pass the cap
      await query("SELECT id FROM users WHERE id = $1 FOR UPDATE", [userId]);
      const [{ n }] = (await query("SELECT COUNT(*) AS n FROM api_keys WHERE user_id = $1 AND revoked_at IS NULL", [userId])) as [{ n: number }];
      if (n >= maxLiveKeys) throw new KeyCapReached(maxLiveKeys);
      await query("INSERT INTO api_keys (id, user_id, name, secret_sha256, prefix, created_at) VALUES ($1, $2, $3, $4, $5, $6)", [
        key.id, userId, name, secretHash(secret), key.prefix, now,
      ]);
    });
    return { key, secret };
  }

  async listKeys(userId: number): Promise<KeyRecord[]> {
    return this.query<KeyRecord>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE user_id = $1 ORDER BY created_at DESC, id`, [userId]);
  }

  async ownedKey(userId: number, keyId: string): Promise<KeyRecord | undefined> {
    return (await this.query<KeyRecord>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1 AND user_id = $2`, [keyId, userId]))[0];
  }

  async revokeKey(userId: number, keyId: string, now = Date.now()): Promise<string | undefined> {
    const rows = await this.query<{ hash: string }>(
      "UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND user_id = $3 AND revoked_at IS NULL RETURNING secret_sha256 AS hash",
      [now, keyId, userId],
    );
    return rows[0]?.hash;
  }

  async revokeAnyKey(keyId: string, now = Date.now()): Promise<string | undefined> {
    const rows = await this.query<{ hash: string }>(
      "UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING secret_sha256 AS hash",
      [now, keyId],
    );
    return rows[0]?.hash;
  }

  async watchRevocations(drop: (hash: string) => void): Promise<void> {
    await this.listener?.close();
    this.listener = new RevocationListener(this.url, TYPES, drop);
    await this.listener.start();
  }

  async usersByEmail(email: string): Promise<User[]> {
    return this.query<User>("SELECT id, email, name FROM users WHERE lower(email) = lower($1) ORDER BY id", [email]);
  }

  async liveKey(hash: string): Promise<KeyOwner | undefined> {
    const rows = await this.query<KeyOwner>(`SELECT id AS "keyId", user_id AS "userId" FROM api_keys WHERE secret_sha256 = $1 AND revoked_at IS NULL`, [hash]);
    return rows[0];
  }

  async recordActivity(batch: ReadonlyMap<string, KeyActivity>): Promise<void> {
    await this.transaction(async (query) => {
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
    await this.transaction(async (query) => {
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
    if (userId === undefined) return this.query<DailyUsage>(`SELECT ${USAGE_COLUMNS} FROM usage_days WHERE day >= $1 ORDER BY day, key_id, provider_id`, [sinceDay]);
    return this.query<DailyUsage>(
      `SELECT ${USAGE_COLUMNS} FROM usage_days WHERE day >= $1 AND key_id IN (SELECT id FROM api_keys WHERE user_id = $2)
       ORDER BY day, key_id, provider_id`,
      [sinceDay, userId],
    );
  }

  /** `table` is one of the two literals, never input; a user id that is not an integer finds no row. */
  protected async limitsIn(table: "api_keys" | "users", id: string | number): Promise<KeyLimits | undefined> {
    if (table === "users" && !Number.isSafeInteger(id)) return undefined;
    return (await this.query<KeyLimits>(`SELECT ${LIMIT_COLUMNS} FROM ${table} WHERE id = $1`, [id]))[0];
  }

  protected async setLimitsIn(table: "api_keys" | "users", id: string | number, limits: Partial<KeyLimits>): Promise<KeyLimits | undefined> {
    const changes = (Object.keys(LIMIT_COLUMN) as (keyof KeyLimits)[]).filter((name) => limits[name] !== undefined);
    if (changes.length === 0) return this.limitsIn(table, id);
    if (table === "users" && !Number.isSafeInteger(id)) return undefined;
    const set = changes.map((name, i) => `${LIMIT_COLUMN[name]} = $${i + 1}`).join(", ");
    const rows = await this.query<KeyLimits>(`UPDATE ${table} SET ${set} WHERE id = $${changes.length + 1} RETURNING ${LIMIT_COLUMNS}`, [
      ...changes.map((name) => limits[name]),
      id,
    ]);
    return rows[0];
  }

  async listUsers(): Promise<UserListing[]> {
    const rows = await this.query<User & KeyLimits & { liveKeys: number }>(
      `SELECT id, email, name, ${LIMIT_COLUMNS},
         (SELECT COUNT(*) FROM api_keys WHERE api_keys.user_id = users.id AND revoked_at IS NULL) AS "liveKeys"
       FROM users ORDER BY id`,
    );
    return rows.map(({ maxConcurrency, rpm, tpm, ...user }) => ({ ...user, limits: { maxConcurrency, rpm, tpm } }));
  }

  async listAllKeys(): Promise<KeyListing[]> {
    const rows = await this.query<KeyRecord & KeyLimits & { userId: number; owner: string | null }>(
      `SELECT ${KEY_COLUMNS}, ${LIMIT_COLUMNS}, user_id AS "userId",
         (SELECT COALESCE(email, name) FROM users WHERE users.id = api_keys.user_id) AS owner
       FROM api_keys ORDER BY created_at DESC, id`,
    );
    return rows.map(({ maxConcurrency, rpm, tpm, ...key }) => ({ ...key, limits: { maxConcurrency, rpm, tpm } }));
  }

  async createSession(id: string, userId: number, expiresAt: number, now = Date.now()): Promise<void> {
    await this.query("DELETE FROM sessions WHERE expires_at <= $1", [now]);
    await this.query("INSERT INTO sessions (id, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)", [id, userId, now, expiresAt]);
  }

  async sessionUser(id: string, now = Date.now()): Promise<User | undefined> {
    const rows = await this.query<User>(
      `SELECT users.id, users.email, users.name FROM sessions JOIN users ON users.id = sessions.user_id
       WHERE sessions.id = $1 AND sessions.expires_at > $2`,
      [id, now],
    );
    return rows[0];
  }

  async deleteSession(id: string): Promise<void> {
    await this.query("DELETE FROM sessions WHERE id = $1", [id]);
  }

  async enrollProvider(name: string, expiresAt: number | null, now = Date.now()): Promise<{ token: ProviderToken; secret: string }> {
    const secret = newSecret(PROVIDER_TOKEN_PREFIX);
    const token: ProviderToken = { id: newKeyId("ptk"), name, prefix: displayPrefix(secret), createdAt: now, expiresAt, revokedAt: null, lastUsedAt: null };
    await this.query("INSERT INTO provider_tokens (id, name, secret_sha256, prefix, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)", [
      token.id, name, secretHash(secret), token.prefix, now, expiresAt,
    ]);
    return { token, secret };
  }

  async listProviderTokens(): Promise<ProviderToken[]> {
    return this.query<ProviderToken>(`SELECT ${TOKEN_COLUMNS} FROM provider_tokens ORDER BY created_at DESC, id`);
  }

  async revokeProviderToken(id: string, now = Date.now()): Promise<boolean> {
    return (await this.query("UPDATE provider_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING id", [now, id])).length > 0;
  }

  async liveProviderTokenIds(now = Date.now()): Promise<string[]> {
    const rows = await this.query<{ id: string }>("SELECT id FROM provider_tokens WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $1)", [now]);
    return rows.map((row) => row.id);
  }

  async liveProviderToken(hash: string, now = Date.now()): Promise<ProviderToken | undefined> {
    const rows = await this.query<ProviderToken>(
      `UPDATE provider_tokens SET last_used_at = $1 WHERE secret_sha256 = $2 AND revoked_at IS NULL
         AND (expires_at IS NULL OR expires_at > $1) RETURNING ${TOKEN_COLUMNS}`,
      [now, hash],
    );
    return rows[0];
  }

  async exportRows(table: StoreTable): Promise<StoreRow[]> {
    return this.query<StoreRow>(`SELECT * FROM ${table}`);
  }

  async importRows(table: StoreTable, rows: readonly StoreRow[]): Promise<void> {
    await this.transaction(async (query) => {
      for (const row of rows) {
        const columns = Object.keys(row);
        await query(`INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(", ")})`, Object.values(row));
      }
      // ids copied as they were: the next user made here must not collide with one of them
      if (table === "users") await query("SELECT setval(pg_get_serial_sequence('users', 'id'), GREATEST((SELECT max(id) FROM users), 1))");
    });
  }

  budgetLeases(): LeaseSource {
    return new PostgresBudgets((text, params) => this.query(text, params));
  }

  async close(): Promise<void> {
    await this.listener?.close();
    await this.pool.end();
  }
}
