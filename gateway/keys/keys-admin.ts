// The operator's `svc-gateway keys` commands on the key store: list every user's keys with their rate limits,
// and set a key's overrides of the `serve --key-*` defaults. A running gateway picks a change up within
// LIMITS_REFRESH_MS, so no restart is needed.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { makePrivateDataDir } from "./private-files.ts";
import type { KeyLimits, KeyStore } from "./key-store.ts";
import { SqliteKeyStore, STORE_FILE } from "./sqlite-store.ts";

/**
 * Opens the store under `dataDir` for one command. A missing store is an error, never a new empty one,
 * unless `create` (issuing the first enrollment token before any gateway ran).
 */
export function withKeyStore<T>(dataDir: string, use: (store: KeyStore) => T, create = false): T {
  if (create) makePrivateDataDir(dataDir, (line) => console.error(`svc-gateway: ${line}`));
  else if (!existsSync(join(dataDir, STORE_FILE))) throw new Error(`no key store at ${join(dataDir, STORE_FILE)} (see --data-dir)`);
  const store = SqliteKeyStore.open(dataDir);
  try {
    return use(store);
  } finally {
    store.close();
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
export function listKeys(store: KeyStore): string[] {
  const keys = store.listAllKeys();
  if (keys.length === 0) return [NO_KEYS];
  return keys.map((key) => {
    const state = key.revokedAt === null ? "live" : "revoked";
    return `${key.id}  ${key.prefix}  ${key.owner ?? "-"}  ${JSON.stringify(key.name)}  ${state}  ${describeLimits(key.limits)}`;
  });
}

/** Sets the overrides given (null: back to the operator's default) and says what the key has now. */
export function setKeyLimits(store: KeyStore, keyId: string, changes: Partial<KeyLimits>): string {
  const limits = store.setKeyLimits(keyId, changes);
  if (limits === undefined) throw new Error(`no key ${keyId} in the key store (svc-gateway keys list shows the ids)`);
  return `${keyId}: ${describeLimits(limits)}`;
}
