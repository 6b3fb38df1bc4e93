// The default KeyStore: SQLite under --data-dir (WAL), created and migrated when the gateway opens it.
// Secrets are stored only as SHA-256 hashes behind a unique index, so a key is found by one index lookup,
// never by scanning.
import { join } from "node:path";
import { privateDatabaseFile } from "./private-files.ts";
import {
  KeyCapReached,
  OverridesByTable,
  type DailyUsage, type KeyActivity, type StoreRow, type StoreTable, type KeyLimits, type KeyListing, type KeyOwner, type KeyRecord, type KeyStore, type ProviderToken, type User,
  type UserClaims, type UserListing,
} from "./key-store.ts";
import { displayPrefix, newKeyId, newSecret, PROVIDER_TOKEN_PREFIX, secretHash } from "./secret.ts";
import { openSqlite, transaction, type SqlDatabase, type SqlStatement, type SqlValue } from "./sqlite-driver.ts";
import { SqliteAudits } from "./sqlite-audits.ts";
import { SqliteUsage } from "./sqlite-usage.ts";
import { migrate, STORE_FILE } from "./sqlite-schema.ts";
import { pollRevocations } from "./revocation-poll.ts";

const TOKEN_COLUMNS = `id, name, prefix, created_at AS createdAt, expires_at AS expiresAt, revoked_at AS revokedAt,
  last_used_at AS lastUsedAt`;

const KEY_COLUMNS = `id, name, prefix, created_at AS createdAt, last_used_at AS lastUsedAt, revoked_at AS revokedAt,
  requests, prompt_tokens AS promptTokens, completion_tokens AS completionTokens`;

const LIMIT_COLUMNS = "max_concurrency AS maxConcurrency, rpm, tpm";
/** The store's column for each override; the only names ever spliced into SQL. */
const LIMIT_COLUMN: Record<keyof KeyLimits, string> = { maxConcurrency: "max_concurrency", rpm: "rpm", tpm: "tpm" };

export class SqliteKeyStore extends OverridesByTable implements KeyStore {
  private readonly statements = new Map<string, SqlStatement>();
  private readonly usage: SqliteUsage;
  private readonly auditRows: SqliteAudits;
  private revocations: { stop(): void } | undefined;

  private constructor(private readonly db: SqlDatabase, dataDir: string) {
    super();
    this.usage = new SqliteUsage(db, (text) => this.sql(text));
    this.auditRows = new SqliteAudits(dataDir, (text) => this.sql(text));
  }

  /** Each statement is compiled once and reused: key and session lookups sit on the request path. */
  private sql<P extends SqlValue[] = SqlValue[], R = unknown>(text: string): SqlStatement<P, R> {
    let statement = this.statements.get(text);
    if (statement === undefined) {
      statement = this.db.prepare(text);
      this.statements.set(text, statement);
    }
    return statement as unknown as SqlStatement<P, R>;
  }

  static open(dataDir: string): SqliteKeyStore {
    const db = openSqlite(privateDatabaseFile(join(dataDir, STORE_FILE)));
    // set first: a second process (`svc-gateway keys …` beside a running gateway) waits for the lock, never fails
    db.exec("PRAGMA busy_timeout = 5000");
    db.exec("PRAGMA journal_mode = WAL");
    // a key handed to its owner must survive a power cut, not only a crash; keys are created rarely
    db.exec("PRAGMA synchronous = FULL");
    db.exec("PRAGMA foreign_keys = ON");
    migrate(db);
    return new SqliteKeyStore(db, dataDir);
  }

  audits(): SqliteAudits {
    return this.auditRows;
  }

  /** Creates the user on first sign-in; later sign-ins refresh email and name. */
  async upsertUser(claims: UserClaims, now = Date.now()): Promise<number> {
    const row = this.sql<[string, string, string | null, string | null, number], { id: number }>(
        `INSERT INTO users (issuer, subject, email, name, created_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (issuer, subject) DO UPDATE SET email = excluded.email, name = excluded.name
         RETURNING id`,
      )
      .get(claims.issuer, claims.subject, claims.email, claims.name, now);
    return row!.id;
  }

  /** The secret is returned here once and exists nowhere else afterwards: only its hash is written. */
  async createKey(userId: number, name: string, now = Date.now(), maxLiveKeys = Infinity): Promise<{ key: KeyRecord; secret: string }> {
    const secret = newSecret();
    const key: KeyRecord = {
      id: newKeyId(),
      name,
      prefix: displayPrefix(secret),
      createdAt: now,
      lastUsedAt: null,
      revokedAt: null,
      requests: 0,
      promptTokens: 0,
      completionTokens: 0,
    };
    // IMMEDIATE: two pages (or a page and `keys create`) counting at once cannot both pass the cap
    transaction(this.db, () => {
      const live = this.sql<[number], { n: number }>("SELECT COUNT(*) AS n FROM api_keys WHERE user_id = ? AND revoked_at IS NULL").get(userId)!.n;
      if (live >= maxLiveKeys) throw new KeyCapReached(maxLiveKeys);
      this.sql("INSERT INTO api_keys (id, user_id, name, secret_sha256, prefix, created_at) VALUES (?, ?, ?, ?, ?, ?)")
        .run(key.id, userId, name, secretHash(secret), key.prefix, now);
    }, "IMMEDIATE");
    return { key, secret };
  }

  /** One user's keys, newest first; never anyone else's. */
  async listKeys(userId: number): Promise<KeyRecord[]> {
    return this.sql<[number], KeyRecord>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE user_id = ? ORDER BY created_at DESC, id`)
      .all(userId);
  }

  /** The key only when it belongs to `userId`: the owner check lives in the query, not in callers. */
  async ownedKey(userId: number, keyId: string): Promise<KeyRecord | undefined> {
    return this.sql<[string, number], KeyRecord>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = ? AND user_id = ?`)
      .get(keyId, userId);
  }

  /** Revokes the user's own live key; returns its secret hash so caches can drop it, or undefined. */
  async revokeKey(userId: number, keyId: string, now = Date.now()): Promise<string | undefined> {
    const row = this.sql<[number, string, number], { hash: string }>(
        `UPDATE api_keys SET revoked_at = ? WHERE id = ? AND user_id = ? AND revoked_at IS NULL
         RETURNING secret_sha256 AS hash`,
      )
      .get(now, keyId, userId);
    return row?.hash;
  }

  async revokeAnyKey(keyId: string, now = Date.now()): Promise<string | undefined> {
    const row = this.sql<[number, string], { hash: string }>(
        "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL RETURNING secret_sha256 AS hash",
      )
      .get(now, keyId);
    return row?.hash;
  }

  /** Another process on this file (`svc-gateway keys revoke`) says nothing: revocations are polled, off the request path. */
  async watchRevocations(drop: (hash: string) => void): Promise<void> {
    this.revocations?.stop();
    this.revocations = pollRevocations((since) => this.sql<[number], { hash: string; at: number }>(
      "SELECT secret_sha256 AS hash, revoked_at AS at FROM api_keys WHERE revoked_at >= ?",
    ).all(since), drop);
  }

  async usersByEmail(email: string): Promise<User[]> {
    return this.sql<[string], User>("SELECT id, email, name FROM users WHERE lower(email) = lower(?) ORDER BY id").all(email);
  }

  async exportRows(table: StoreTable): Promise<StoreRow[]> {
    return this.sql<[], StoreRow>(`SELECT * FROM ${table}`).all();
  }

  async importRows(table: StoreTable, rows: readonly StoreRow[]): Promise<void> {
    transaction(this.db, () => {
      for (const row of rows) {
        const columns = Object.keys(row);
        this.sql(`INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`).run(...Object.values(row));
      }
    });
  }

  /** The owner of the live key with this secret hash. */
  async liveKey(hash: string): Promise<KeyOwner | undefined> {
    return this.sql<[string], KeyOwner>(
        "SELECT id AS keyId, user_id AS userId FROM api_keys WHERE secret_sha256 = ? AND revoked_at IS NULL",
      )
      .get(hash);
  }

  /** Writes a batch of per-key activity in one transaction. */
  async recordActivity(batch: ReadonlyMap<string, KeyActivity>): Promise<void> {
    const update = this.sql(
      `UPDATE api_keys SET last_used_at = MAX(COALESCE(last_used_at, 0), ?), requests = requests + ?,
         prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ? WHERE id = ?`,
    );
    transaction(this.db, () => {
      for (const [keyId, a] of batch) update.run(a.lastUsedAt, a.requests, a.promptTokens, a.completionTokens, keyId);
    });
  }

  async recordDailyUsage(batch: readonly DailyUsage[]): Promise<void> {
    this.usage.record(batch);
  }

  async dailyUsage(sinceDay: string, userId?: number): Promise<DailyUsage[]> {
    return this.usage.since(sinceDay, userId);
  }

  async listUsers(): Promise<UserListing[]> {
    const rows = this.sql<[], User & KeyLimits & { liveKeys: number }>(
        `SELECT id, email, name, ${LIMIT_COLUMNS},
           (SELECT COUNT(*) FROM api_keys WHERE api_keys.user_id = users.id AND revoked_at IS NULL) AS liveKeys
         FROM users ORDER BY id`,
      )
      .all();
    return rows.map(({ maxConcurrency, rpm, tpm, ...user }) => ({ ...user, limits: { maxConcurrency, rpm, tpm } }));
  }

  /** Keys and users carry the same three override columns; `table` is one of the two literals, never input. */
  protected async limitsIn(table: "api_keys" | "users", id: string | number): Promise<KeyLimits | undefined> {
    return this.sql<[string | number], KeyLimits>(`SELECT ${LIMIT_COLUMNS} FROM ${table} WHERE id = ?`).get(id);
  }

  protected async setLimitsIn(table: "api_keys" | "users", id: string | number, limits: Partial<KeyLimits>): Promise<KeyLimits | undefined> {
    const changes = (Object.keys(LIMIT_COLUMN) as (keyof KeyLimits)[]).filter((name) => limits[name] !== undefined);
    if (changes.length === 0) return await this.limitsIn(table, id);
    const set = changes.map((name) => `${LIMIT_COLUMN[name]} = ?`).join(", ");
    return this.sql<SqlValue[], KeyLimits>(`UPDATE ${table} SET ${set} WHERE id = ? RETURNING ${LIMIT_COLUMNS}`)
      .get(...changes.map((name) => limits[name] as number | null), id);
  }

  async listAllKeys(): Promise<KeyListing[]> {
    const rows = this.sql<[], KeyRecord & KeyLimits & { userId: number; owner: string | null }>(
        `SELECT ${KEY_COLUMNS}, ${LIMIT_COLUMNS}, user_id AS userId,
           (SELECT COALESCE(email, name) FROM users WHERE users.id = api_keys.user_id) AS owner
         FROM api_keys ORDER BY created_at DESC, id`,
      )
      .all();
    return rows.map(({ maxConcurrency, rpm, tpm, ...key }) => ({ ...key, limits: { maxConcurrency, rpm, tpm } }));
  }

  async createSession(id: string, userId: number, expiresAt: number, now = Date.now()): Promise<void> {
    this.sql("DELETE FROM sessions WHERE expires_at <= ?").run(now);
    this.sql("INSERT INTO sessions (id, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)").run(id, userId, now, expiresAt);
  }

  /** The signed-in user of a live session. */
  async sessionUser(id: string, now = Date.now()): Promise<User | undefined> {
    return this.sql<[string, number], User>(
        `SELECT users.id, users.email, users.name FROM sessions JOIN users ON users.id = sessions.user_id
         WHERE sessions.id = ? AND sessions.expires_at > ?`,
      )
      .get(id, now);
  }

  async deleteSession(id: string): Promise<void> {
    this.sql("DELETE FROM sessions WHERE id = ?").run(id);
  }

  async enrollProvider(name: string, expiresAt: number | null, now = Date.now()): Promise<{ token: ProviderToken; secret: string }> {
    const secret = newSecret(PROVIDER_TOKEN_PREFIX);
    const token: ProviderToken = { id: newKeyId("ptk"), name, prefix: displayPrefix(secret), createdAt: now, expiresAt, revokedAt: null, lastUsedAt: null };
    this.sql("INSERT INTO provider_tokens (id, name, secret_sha256, prefix, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)")
      .run(token.id, name, secretHash(secret), token.prefix, now, expiresAt);
    return { token, secret };
  }

  async listProviderTokens(): Promise<ProviderToken[]> {
    return this.sql<[], ProviderToken>(`SELECT ${TOKEN_COLUMNS} FROM provider_tokens ORDER BY created_at DESC, id`).all();
  }

  async revokeProviderToken(id: string, now = Date.now()): Promise<boolean> {
    return this.sql("UPDATE provider_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL").run(now, id).changes > 0;
  }

  async liveProviderTokenIds(now = Date.now()): Promise<string[]> {
    return this.sql<[number], { id: string }>("SELECT id FROM provider_tokens WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)")
      .all(now)
      .map((row) => row.id);
  }

  async liveProviderToken(hash: string, now = Date.now()): Promise<ProviderToken | undefined> {
    return this.sql<[number, string, number], ProviderToken>(
        `UPDATE provider_tokens SET last_used_at = ? WHERE secret_sha256 = ? AND revoked_at IS NULL
           AND (expires_at IS NULL OR expires_at > ?) RETURNING ${TOKEN_COLUMNS}`,
      )
      .get(now, hash, now);
  }

  async close(): Promise<void> {
    this.revocations?.stop();
    this.db.close();
  }
}
