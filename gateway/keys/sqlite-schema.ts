// The SQLite key store's schema: its file name and the migrations that move it one version at a time, run in one
// IMMEDIATE transaction at open, so two processes opening one file never both migrate it.
import { pragmaValue, transaction, type SqlDatabase } from "./sqlite-driver.ts";
import { AUDIT_REASON_MIGRATION, AUDITS_MIGRATION } from "./sqlite-audits.ts";
import { USAGE_MIGRATION } from "./sqlite-usage.ts";

export const STORE_FILE = "keys.sqlite";

/** Each entry moves the schema one version on; `PRAGMA user_version` says how many have run. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE users (
     id INTEGER PRIMARY KEY,
     issuer TEXT NOT NULL,
     subject TEXT NOT NULL,
     email TEXT,
     name TEXT,
     created_at INTEGER NOT NULL,
     UNIQUE (issuer, subject)
   );
   CREATE TABLE api_keys (
     id TEXT PRIMARY KEY,
     user_id INTEGER NOT NULL REFERENCES users(id),
     name TEXT NOT NULL,
     secret_sha256 TEXT NOT NULL UNIQUE,
     prefix TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     last_used_at INTEGER,
     revoked_at INTEGER,
     requests INTEGER NOT NULL DEFAULT 0,
     prompt_tokens INTEGER NOT NULL DEFAULT 0,
     completion_tokens INTEGER NOT NULL DEFAULT 0
   );
   CREATE INDEX api_keys_by_user ON api_keys (user_id, created_at);
   CREATE TABLE sessions (
     id TEXT PRIMARY KEY,
     user_id INTEGER NOT NULL REFERENCES users(id),
     created_at INTEGER NOT NULL,
     expires_at INTEGER NOT NULL
   );`,
  // provider enrollment tokens (only hashes, like API keys), and per-key overrides of the operator's
  // default rate limits (NULL: the default applies)
  `CREATE TABLE provider_tokens (
     id TEXT PRIMARY KEY,
     name TEXT NOT NULL,
     secret_sha256 TEXT NOT NULL UNIQUE,
     prefix TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     expires_at INTEGER,
     revoked_at INTEGER,
     last_used_at INTEGER
   );
   ALTER TABLE api_keys ADD COLUMN max_concurrency INTEGER;
   ALTER TABLE api_keys ADD COLUMN rpm INTEGER;
   ALTER TABLE api_keys ADD COLUMN tpm INTEGER;`,
  // requests and tokens per key, provider and UTC day, for the usage charts and the operator's totals
  USAGE_MIGRATION,
  // per-user overrides of the operator's per-user rate limits, across all of a user's keys (NULL: the default)
  `ALTER TABLE users ADD COLUMN max_concurrency INTEGER;
   ALTER TABLE users ADD COLUMN rpm INTEGER;
   ALTER TABLE users ADD COLUMN tpm INTEGER;`,
  // revocations are polled by time (revocation-poll.ts), so another process's `keys revoke` reaches a gateway
  "CREATE INDEX IF NOT EXISTS api_keys_by_revocation ON api_keys (revoked_at) WHERE revoked_at IS NOT NULL;",
  // `keys limit` / `users limit` with `default` stored an empty string (issue 41), which read as a limit of 0: every
  // request refused with Retry-After: Infinity. Such a value meant the default, and is NULL again
  `UPDATE api_keys SET max_concurrency = NULL WHERE max_concurrency IS NOT NULL AND typeof(max_concurrency) <> 'integer';
   UPDATE api_keys SET rpm = NULL WHERE rpm IS NOT NULL AND typeof(rpm) <> 'integer';
   UPDATE api_keys SET tpm = NULL WHERE tpm IS NOT NULL AND typeof(tpm) <> 'integer';
   UPDATE users SET max_concurrency = NULL WHERE max_concurrency IS NOT NULL AND typeof(max_concurrency) <> 'integer';
   UPDATE users SET rpm = NULL WHERE rpm IS NOT NULL AND typeof(rpm) <> 'integer';
   UPDATE users SET tpm = NULL WHERE tpm IS NOT NULL AND typeof(tpm) <> 'integer';`,
  // audits concluded by the gateway's auditor (issue 43): records, the bars a failure makes, and their clearing
  AUDITS_MIGRATION,
  // why a failure bars without public evidence (the sequential rule's)
  AUDIT_REASON_MIGRATION,
];

/** Runs the migrations this file has not had yet; a file newer than this gateway is refused. */
export function migrate(db: SqlDatabase): void {
  transaction(db, () => {
    const version = pragmaValue(db, "user_version") as number;
    if (version > MIGRATIONS.length) {
      throw new Error(`${STORE_FILE} has schema version ${version}, newer than this gateway knows (${MIGRATIONS.length}); upgrade svc`);
    }
    for (const step of MIGRATIONS.slice(version)) db.exec(step);
    db.exec(`PRAGMA user_version = ${MIGRATIONS.length}`);
  }, "IMMEDIATE");
}
