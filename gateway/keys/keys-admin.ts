// The operator's `svc-gateway keys` and `users` commands on the key store: list every user's keys with their rate
// limits, make a key for a user within the cap, list users, and set a key's or a user's overrides of the
// `serve --key-*` / `--user-*` defaults. A running gateway picks a change up within LIMITS_REFRESH_MS, so no
// restart is needed.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { makePrivateDataDir } from "./private-files.ts";
import { KeyCapReached, type KeyLimits, type KeyRecord, type KeyStore } from "./key-store.ts";
import { SqliteKeyStore, STORE_FILE } from "./sqlite-store.ts";

/**
 * Opens the store under `dataDir` for one command. A missing store is an error, never a new empty one,
 * unless `create` (issuing the first enrollment token before any gateway ran).
 */
export async function withKeyStore<T>(dataDir: string, use: (store: KeyStore) => Promise<T>, create = false): Promise<T> {
  if (create) makePrivateDataDir(dataDir, (line) => console.error(`svc-gateway: ${line}`));
  else if (!existsSync(join(dataDir, STORE_FILE))) throw new Error(`no key store at ${join(dataDir, STORE_FILE)} (see --data-dir)`);
  const store = SqliteKeyStore.open(dataDir);
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

/** A new key for an existing user, refused with the flag to raise when they hold `maxLiveKeys` live keys already. */
export async function createUserKey(store: KeyStore, userId: number, name: string, maxLiveKeys: number): Promise<{ key: KeyRecord; secret: string }> {
  if ((await store.userLimits(userId)) === undefined) throw new Error(`--user ${userId}: no such user in the key store (svc-gateway users list shows the ids)`);
  try {
    return await store.createKey(userId, name, Date.now(), maxLiveKeys);
  } catch (err) {
    if (!(err instanceof KeyCapReached)) throw err;
    throw new Error(`--user ${userId}: already holds ${err.max} live keys, the cap (--max-keys-per-user); revoke one on the settings page first`);
  }
}

/** Sets the overrides given (null: back to the operator's default) and says what the key has now. */
export async function setKeyLimits(store: KeyStore, keyId: string, changes: Partial<KeyLimits>): Promise<string> {
  const limits = await store.setKeyLimits(keyId, changes);
  if (limits === undefined) throw new Error(`no key ${keyId} in the key store (svc-gateway keys list shows the ids)`);
  return `${keyId}: ${describeLimits(limits)}`;
}
