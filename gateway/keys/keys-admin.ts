// The operator's `svc-gateway keys` and `users` commands on the key store: list every user's keys with their rate
// limits, make a key for a user within the cap, list users, and set a key's or a user's overrides of the
// `serve --key-*` / `--user-*` defaults. A running gateway picks a change up within LIMITS_REFRESH_MS, so no
// restart is needed.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { KeyCapReached, STORE_TABLES, type KeyLimits, type KeyRecord, type KeyStore, type StoreTable } from "./key-store.ts";
import { openKeyStore, type StoreLocation } from "./open-store.ts";
import { STORE_FILE } from "./sqlite-schema.ts";

/**
 * Opens the store for one command: PostgreSQL with `--database`, else the SQLite file under `--data-dir`. A
 * missing SQLite store is an error, never a new empty one, unless `create` (the first enrollment token before any
 * gateway ran); a database is migrated on open, as the gateway does.
 */
export async function withKeyStore<T>(where: StoreLocation | string, use: (store: KeyStore) => Promise<T>, create = false): Promise<T> {
  const location = typeof where === "string" ? { dataDir: where } : where;
  const file = join(location.dataDir, STORE_FILE);
  if (location.database === undefined && !create && !existsSync(file)) throw new Error(`no key store at ${file} (see --data-dir, or --database)`);
  const store = await openKeyStore(location);
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}

/** `concurrency=default rpm=60 tpm=default`: what `keys list` and `keys limit` print for a key. */
export function describeLimits(limits: KeyLimits): string {
  const one = (value: number | null) => (value === null ? "default" : String(value));
  return `concurrency=${one(limits.maxConcurrency)} rpm=${one(limits.rpm)} tpm=${one(limits.tpm)}`;
}

/** Said instead of the list when the store holds no key: an empty answer would read as a failure. */
const NO_KEYS = "no user API keys in this key store yet: signed-in users make them on the settings page (/settings, with sign-in set up: --oidc-issuer); operator keys (SVC_OPERATOR_KEYS) are never stored";

/** One line per key, newest first: id, display prefix, owner, name, state and limits. */
export async function listKeys(store: KeyStore): Promise<string[]> {
  const keys = await store.listAllKeys();
  if (keys.length === 0) return [NO_KEYS];
  return keys.map((key) => {
    const state = key.revokedAt === null ? "live" : "revoked";
    return `${key.id}  ${key.prefix}  ${key.owner ?? "-"}  ${JSON.stringify(key.name)}  ${state}  ${describeLimits(key.limits)}`;
  });
}

/** Said instead of the list when the store holds no user: users appear on their first sign-in. */
const NO_USERS = "no users in this key store yet: people appear here when they first sign in on the settings page (/settings, with sign-in set up: --oidc-issuer)";

/** One line per user, oldest first: id, email or name, live keys, per-user limits. */
export async function listUsers(store: KeyStore): Promise<string[]> {
  const users = await store.listUsers();
  if (users.length === 0) return [NO_USERS];
  return users.map((user) => `${user.id}  ${user.email ?? user.name ?? "-"}  keys=${user.liveKeys}  ${describeLimits(user.limits)}`);
}

/** Sets the user's overrides given (null: back to the operator's `--user-*` default) and says what they have now. */
export async function setUserLimits(store: KeyStore, userId: number, changes: Partial<KeyLimits>): Promise<string> {
  const limits = await store.setUserLimits(userId, changes);
  if (limits === undefined) throw new Error(`no user ${userId} in the key store (svc-gateway users list shows the ids)`);
  return `user ${userId}: ${describeLimits(limits)}`;
}

/** The one user `--user` names; an email matching none or several is an error saying what to do. */
async function resolveUser(store: KeyStore, user: number | string): Promise<number> {
  if (typeof user === "number") {
    if ((await store.userLimits(user)) === undefined) throw new Error(`--user ${user}: no such user in the key store (svc-gateway users list shows the ids)`);
    return user;
  }
  const found = await store.usersByEmail(user);
  if (found.length === 0) throw new Error(`--user ${user}: no user with that email in the key store; people appear on their first sign-in (svc-gateway users list)`);
  if (found.length > 1) throw new Error(`--user ${user}: ${found.length} users have that email (ids ${found.map((u) => u.id).join(", ")}); give the id instead`);
  return found[0]!.id;
}

/** A new key for an existing user, as if made on their settings page; refused with the flag to raise past the cap. */
export async function createUserKey(store: KeyStore, user: number | string, name: string, maxLiveKeys: number): Promise<{ key: KeyRecord; secret: string; userId: number }> {
  const userId = await resolveUser(store, user);
  try {
    return { ...(await store.createKey(userId, name, Date.now(), maxLiveKeys)), userId };
  } catch (err) {
    if (!(err instanceof KeyCapReached)) throw err;
    throw new Error(`--user ${user}: already holds ${err.max} live keys, the cap (--max-keys-per-user); revoke one on the settings page first`);
  }
}

/** Sets the overrides given (null: back to the operator's default) and says what the key has now. */
export async function setKeyLimits(store: KeyStore, keyId: string, changes: Partial<KeyLimits>): Promise<string> {
  const limits = await store.setKeyLimits(keyId, changes);
  if (limits === undefined) throw new Error(`no key ${keyId} in the key store (svc-gateway keys list shows the ids)`);
  return `${keyId}: ${describeLimits(limits)}`;
}

/**
 * `keys migrate`: copies every row (users, keys as hashes, sessions, enrollment tokens, usage) from one store into
 * another that holds none yet, table by table; returns the count per table. A target with rows is refused.
 */
export async function copyStore(from: KeyStore, to: KeyStore): Promise<Record<StoreTable, number>> {
  for (const table of STORE_TABLES) {
    if ((await to.exportRows(table)).length > 0) throw new Error(`--database: the target key store already holds ${table}; migrate into an empty database`);
  }
  const counts = {} as Record<StoreTable, number>;
  for (const table of STORE_TABLES) {
    const rows = await from.exportRows(table);
    await to.importRows(table, rows);
    counts[table] = rows.length;
  }
  return counts;
}
