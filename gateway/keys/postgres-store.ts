// The KeyStore for replicas (DESIGN §7): PostgreSQL through `pg`, chosen by `--database postgres://…`. The same
// tables and hashing as SQLite; migrations run at open under an advisory lock; revocations reach every replica
// through LISTEN/NOTIFY (postgres-revocations.ts). The connection and its 503 while the database is away are in
// postgres-pool.ts, usage in postgres-usage.ts, shared rate limits in postgres-budgets.ts, claim epochs in postgres-epochs.ts; the
// secrets all gateways share are one table (svc_shared_secrets).
import { PostgresAudits } from "./postgres-audits.ts";
import {
  KeyCapReached,
  OverridesByTable,
  type DailyUsage, type KeyActivity, type KeyLimits, type KeyListing, type KeyOwner, type KeyRecord, type KeyStore, type ProviderToken,
  type StoreRow, type StoreTable, type User, type UserClaims, type UserListing,
} from "./key-store.ts";
import type { LeaseSource } from "./budget-lease.ts";
import type { ClaimEpochs } from "../coordinator/claim-epochs.ts";
import { PostgresBudgets } from "./postgres-budgets.ts";
import { postgresEpochs } from "./postgres-epochs.ts";
import { PostgresPool, TYPES } from "./postgres-pool.ts";
import { RevocationListener } from "./postgres-revocations.ts";
import { PostgresUsage } from "./postgres-usage.ts";
import { displayPrefix, newKeyId, newSecret, PROVIDER_TOKEN_PREFIX, secretHash } from "./secret.ts";

const TOKEN_COLUMNS = `id, name, prefix, created_at AS "createdAt", expires_at AS "expiresAt", revoked_at AS "revokedAt",
  last_used_at AS "lastUsedAt"`;
const KEY_COLUMNS = `id, name, prefix, created_at AS "createdAt", last_used_at AS "lastUsedAt", revoked_at AS "revokedAt",
  requests, prompt_tokens AS "promptTokens", completion_tokens AS "completionTokens"`;
const LIMIT_COLUMNS = `max_concurrency AS "maxConcurrency", rpm, tpm`;
const LIMIT_COLUMN: Record<keyof KeyLimits, string> = { maxConcurrency: "max_concurrency", rpm: "rpm", tpm: "tpm" };

export class PostgresKeyStore extends OverridesByTable implements KeyStore {
  private listener: RevocationListener | undefined;
  private readonly query;
  private readonly usage: PostgresUsage;
  private readonly auditRows: PostgresAudits;

  private constructor(
    private readonly pool: PostgresPool,
    private readonly url: string,
  ) {
    super();
    this.query = pool.query;
    this.usage = new PostgresUsage(pool);
    this.auditRows = new PostgresAudits(pool.query);
  }

  /** Connects and migrates; throws the driver's error when the database cannot be reached or refuses us. */
  static async open(url: string, onError: (err: Error) => void = () => undefined): Promise<PostgresKeyStore> {
    return new PostgresKeyStore(await PostgresPool.open(url, onError), url);
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
    await this.pool.transaction(async (query) => {
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

  recordActivity(batch: ReadonlyMap<string, KeyActivity>): Promise<void> {
    return this.usage.recordActivity(batch);
  }

  recordDailyUsage(batch: readonly DailyUsage[]): Promise<void> {
    return this.usage.recordDailyUsage(batch);
  }

  dailyUsage(sinceDay: string, userId?: number): Promise<DailyUsage[]> {
    return this.usage.dailyUsage(sinceDay, userId);
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
    await this.pool.transaction(async (query) => {
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

  claimEpochs(): ClaimEpochs {
    return postgresEpochs((text) => this.query(text));
  }

  audits(): PostgresAudits {
    return this.auditRows;
  }

  async sharedSecret(name: string, made: string): Promise<string> {
    // two statements, so the read sees a row another replica committed while this insert waited on it
    await this.query("INSERT INTO svc_shared_secrets (name, value, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING", [name, made, Date.now()]);
    const [row] = await this.query("SELECT value FROM svc_shared_secrets WHERE name = $1", [name]);
    return row!.value as string;
  }

  async close(): Promise<void> {
    await this.listener?.close();
    await this.pool.end();
  }
}
