// SPEC §5's key store on a real SQLite file in a temp dir: schema and migration, secrets kept only as hashes
// and found through an index, keys scoped to their owner, revocation and sessions; and docs/operator-guide.md "Rate limits":
// per-key and per-user overrides, read through UserKeys and set by the operator's `svc-gateway keys` and `users`
// commands, and the cap on a user's live keys.
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createUserKey, describeLimits, listKeys, listUsers, setKeyLimits, setUserLimits, withKeyStore } from "../../../../gateway/keys/keys-admin.ts";
import { KeyCapReached } from "../../../../gateway/keys/key-store.ts";
import { displayPrefix, newSecret, secretHash } from "../../../../gateway/keys/secret.ts";
import { openSqlite, pragmaValue } from "../../../../gateway/keys/sqlite-driver.ts";
import { SqliteKeyStore, STORE_FILE } from "../../../../gateway/keys/sqlite-store.ts";
import { LIMITS_REFRESH_MS, UserKeys } from "../../../../gateway/keys/user-keys.ts";
import { nodeSha256Hex } from "../../../../src/crypto/sha256-node.ts";

const dirs: string[] = [];
function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "svc-keys-"));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const alice = { issuer: "https://id.example", subject: "alice", email: "alice@example.test", name: "Alice" };
const bob = { issuer: "https://id.example", subject: "bob", email: null, name: null };

describe("§5 Authentication: the key store", () => {
  it("secrets are sk-svc_ and 32 random bytes in base64url; the display prefix shows four characters of them", () => {
    const secret = newSecret();
    expect(secret).toMatch(/^sk-svc_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(secret.slice(7), "base64url")).toHaveLength(32);
    expect(newSecret()).not.toBe(secret);
    expect(displayPrefix(secret)).toBe(`${secret.slice(0, 11)}…`);
    expect(secretHash(secret)).toBe(nodeSha256Hex(secret));
  });

  it("the gateway creates the schema in WAL mode, and reopening migrates nothing twice", () => {
    const dir = freshDir();
    SqliteKeyStore.open(dir).close();
    const db = openSqlite(join(dir, STORE_FILE));
    expect(pragmaValue(db, "journal_mode")).toBe("wal");
    expect(pragmaValue(db, "user_version")).toBe(4);
    const tables = db.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all().map((t) => t.name);
    expect(tables).toEqual(["api_keys", "provider_tokens", "sessions", "usage_days", "users"]);
    db.close();
    SqliteKeyStore.open(dir).close();
  });

  it("a store written before provider tokens gains them and the usage table on open and keeps every key", () => {
    const dir = freshDir();
    const store = SqliteKeyStore.open(dir);
    const { secret } = store.createKey(store.upsertUser(alice), "old key");
    store.close();
    // take the file back to schema version 1, as the first release wrote it
    const db = openSqlite(join(dir, STORE_FILE));
    db.exec("DROP TABLE usage_days; DROP TABLE provider_tokens; ALTER TABLE api_keys DROP COLUMN max_concurrency; ALTER TABLE api_keys DROP COLUMN rpm; ALTER TABLE api_keys DROP COLUMN tpm;");
    db.exec("ALTER TABLE users DROP COLUMN max_concurrency; ALTER TABLE users DROP COLUMN rpm; ALTER TABLE users DROP COLUMN tpm;");
    db.exec("PRAGMA user_version = 1");
    db.close();
    const reopened = SqliteKeyStore.open(dir);
    expect(reopened.liveKey(secretHash(secret))).toBeDefined();
    expect(reopened.enrollProvider("mac-1", null).secret).toMatch(/^svc-prov_/);
    // and the per-day usage table of schema version 3
    reopened.recordDailyUsage([{ day: "2025-01-01", keyId: "op_x", providerId: "p", requests: 1, promptTokens: 2, completionTokens: 3 }]);
    expect(reopened.dailyUsage("2025-01-01")).toHaveLength(1);
    // and the per-user overrides of schema version 4
    expect(reopened.setUserLimits(1, { rpm: 7 })).toEqual({ maxConcurrency: null, rpm: 7, tpm: null });
    reopened.close();
  });

  it("a store written by a newer gateway is refused rather than misread", () => {
    const dir = freshDir();
    SqliteKeyStore.open(dir).close();
    const db = openSqlite(join(dir, STORE_FILE));
    db.exec("PRAGMA user_version = 99");
    db.close();
    expect(() => SqliteKeyStore.open(dir)).toThrow(/schema version 99, newer than this gateway knows/);
  });

  it("only the SHA-256 of a secret is stored, and a key is found by an index lookup on it, never by scanning", () => {
    const dir = freshDir();
    const store = SqliteKeyStore.open(dir);
    const userId = store.upsertUser(alice);
    const { key, secret } = store.createKey(userId, "laptop");
    expect(store.liveKey(secretHash(secret))).toEqual({ keyId: key.id, userId });
    expect(store.liveKey(secretHash(newSecret()))).toBeUndefined();
    store.close();
    const bytes = readdirSync(dir).map((f) => readFileSync(join(dir, f)).toString("latin1")).join("");
    expect(bytes).not.toContain(secret.slice(7));
    expect(bytes).toContain(secretHash(secret));
    const db = openSqlite(join(dir, STORE_FILE), { readOnly: true });
    const plan = db
      .prepare("EXPLAIN QUERY PLAN SELECT id, user_id FROM api_keys WHERE secret_sha256 = ? AND revoked_at IS NULL")
      .all("x") as { detail: string }[];
    expect(plan.map((p) => p.detail).join(" ")).toMatch(/SEARCH api_keys USING INDEX sqlite_autoindex_api_keys_2 \(secret_sha256=\?\)/);
    db.close();
  });

  it("users are one per issuer and subject; a later sign-in refreshes email and name", () => {
    const store = SqliteKeyStore.open(freshDir());
    const id = store.upsertUser(alice);
    expect(store.upsertUser({ ...alice, email: "new@example.test" })).toBe(id);
    store.createSession("s", id, Date.now() + 60_000);
    expect(store.sessionUser("s")).toEqual({ id, email: "new@example.test", name: "Alice" });
    expect(store.upsertUser({ ...alice, issuer: "https://other.example" })).not.toBe(id);
    store.close();
  });

  it("a user's keys are theirs alone: listing, looking up and revoking another user's key find nothing", () => {
    const store = SqliteKeyStore.open(freshDir());
    const [a, b] = [store.upsertUser(alice), store.upsertUser(bob)];
    const { key, secret } = store.createKey(a, "server");
    expect(store.listKeys(a).map((k) => k.id)).toEqual([key.id]);
    expect(store.listKeys(b)).toEqual([]);
    expect(store.ownedKey(b, key.id)).toBeUndefined();
    expect(store.revokeKey(b, key.id)).toBeUndefined();
    expect(store.liveKey(secretHash(secret))).toBeDefined();
    expect(store.revokeKey(a, key.id)).toBe(secretHash(secret));
    expect(store.revokeKey(a, key.id)).toBeUndefined(); // once
    expect(store.liveKey(secretHash(secret))).toBeUndefined();
    expect(store.ownedKey(a, key.id)).toMatchObject({ name: "server", revokedAt: expect.any(Number) });
    store.close();
  });

  it("activity batches add up per key and keep the latest use", () => {
    const store = SqliteKeyStore.open(freshDir());
    const { key } = store.createKey(store.upsertUser(alice), "k");
    store.recordActivity(new Map([[key.id, { lastUsedAt: 2_000, requests: 2, promptTokens: 10, completionTokens: 4 }]]));
    store.recordActivity(new Map([[key.id, { lastUsedAt: 1_000, requests: 1, promptTokens: 1, completionTokens: 1 }]]));
    expect(store.listKeys(1)[0]).toMatchObject({ lastUsedAt: 2_000, requests: 3, promptTokens: 11, completionTokens: 5 });
    store.close();
  });

  it("sessions end at their expiry or when deleted", () => {
    const store = SqliteKeyStore.open(freshDir());
    const userId = store.upsertUser(alice);
    store.createSession("s1", userId, 10_000, 1_000);
    expect(store.sessionUser("s1", 9_999)).toMatchObject({ id: userId });
    expect(store.sessionUser("s1", 10_000)).toBeUndefined();
    store.createSession("s2", userId, 50_000, 1_000);
    store.deleteSession("s2");
    expect(store.sessionUser("s2", 2_000)).toBeUndefined();
    store.close();
  });
});

describe("Provider enrollment tokens in the key store", () => {
  it("a token is svc-prov_ and 32 random bytes; only its hash is stored, and the listing never shows it", () => {
    const dir = freshDir();
    const store = SqliteKeyStore.open(dir);
    const { token, secret } = store.enrollProvider("mac-studio", null, 1_000);
    expect(secret).toMatch(/^svc-prov_[A-Za-z0-9_-]{43}$/);
    expect(token).toMatchObject({ name: "mac-studio", prefix: `${secret.slice(0, 13)}…`, createdAt: 1_000, expiresAt: null, revokedAt: null });
    expect(token.id).toMatch(/^ptk_[0-9a-f]{24}$/);
    expect(store.listProviderTokens()).toEqual([token]);
    store.close();
    expect(readFileSync(join(dir, STORE_FILE)).includes(secret)).toBe(false);
  });

  it("a live token is found by its hash and noted as used; revoked, expired and unknown ones are not", () => {
    const store = SqliteKeyStore.open(freshDir());
    const live = store.enrollProvider("a", null, 1_000);
    const expiring = store.enrollProvider("b", 5_000, 1_000);
    const revoked = store.enrollProvider("c", null, 1_000);
    expect(store.revokeProviderToken(revoked.token.id, 2_000)).toBe(true);
    expect(store.revokeProviderToken(revoked.token.id, 2_000)).toBe(false);
    expect(store.liveProviderToken(secretHash(live.secret), 3_000)).toMatchObject({ id: live.token.id, lastUsedAt: 3_000 });
    expect(store.liveProviderToken(secretHash(expiring.secret), 4_999)?.id).toBe(expiring.token.id);
    expect(store.liveProviderToken(secretHash(expiring.secret), 5_000)).toBeUndefined();
    expect(store.liveProviderToken(secretHash(revoked.secret), 3_000)).toBeUndefined();
    expect(store.liveProviderToken(secretHash("svc-prov_nothing"), 3_000)).toBeUndefined();
    // the ids the coordinator's enrollment watch reads every second: the same live set
    expect(store.liveProviderTokenIds(4_999).sort()).toEqual([live.token.id, expiring.token.id].sort());
    expect(store.liveProviderTokenIds(5_000)).toEqual([live.token.id]);
    store.close();
  });
});

const DEFAULTS = { maxConcurrency: null, rpm: null, tpm: null };

describe("Rate limits: per-key overrides in the key store", () => {
  it("a new key follows the operator's defaults; overrides are set one by one and null returns to the default", () => {
    const store = SqliteKeyStore.open(freshDir());
    const { key } = store.createKey(store.upsertUser(alice), "ci");
    expect(store.keyLimits(key.id)).toEqual(DEFAULTS);
    expect(store.setKeyLimits(key.id, { rpm: 60 })).toEqual({ ...DEFAULTS, rpm: 60 });
    expect(store.setKeyLimits(key.id, { maxConcurrency: 2, tpm: 10_000 })).toEqual({ maxConcurrency: 2, rpm: 60, tpm: 10_000 });
    expect(store.setKeyLimits(key.id, { rpm: null, tpm: undefined })).toEqual({ maxConcurrency: 2, rpm: null, tpm: 10_000 });
    expect(store.setKeyLimits(key.id, {})).toEqual({ maxConcurrency: 2, rpm: null, tpm: 10_000 });
    expect(store.keyLimits("key_unknown")).toBeUndefined();
    expect(store.setKeyLimits("key_unknown", { rpm: 1 })).toBeUndefined();
    store.close();
  });

  it("the operator's listing holds every user's keys with owner and limits, never a secret", () => {
    const store = SqliteKeyStore.open(freshDir());
    const aliceId = store.upsertUser(alice);
    const older = store.createKey(aliceId, "old", 1_000);
    const newer = store.createKey(store.upsertUser({ ...alice, subject: "bob", email: null, name: "Bob" }), "new", 2_000);
    store.setKeyLimits(older.key.id, { tpm: 500 });
    store.revokeKey(aliceId, older.key.id, 3_000);
    const listing = store.listAllKeys();
    expect(listing.map((k) => [k.id, k.owner, k.revokedAt, k.limits])).toEqual([
      [newer.key.id, "Bob", null, DEFAULTS],
      [older.key.id, "alice@example.test", 3_000, { ...DEFAULTS, tpm: 500 }],
    ]);
    expect(JSON.stringify(listing)).not.toContain(older.secret);
    store.close();
  });

  it("UserKeys reads a key's overrides once, then again only after LIMITS_REFRESH_MS", () => {
    const store = SqliteKeyStore.open(freshDir());
    const { key } = store.createKey(store.upsertUser(alice), "ci");
    const users = new UserKeys(store, (err) => { throw err; }, 3_600_000);
    expect(users.limits(key.id, 0)).toEqual(DEFAULTS);
    store.setKeyLimits(key.id, { rpm: 5 }); // as `svc-gateway keys limit` does from another process
    expect(users.limits(key.id, LIMITS_REFRESH_MS - 1)).toEqual(DEFAULTS);
    expect(users.limits(key.id, LIMITS_REFRESH_MS)).toEqual({ ...DEFAULTS, rpm: 5 });
    users.close();
  });
});

describe("Rate limits: `svc-gateway keys list` and `keys limit`", () => {
  it("list prints one line per key; limit sets overrides and prints what the key has now", () => {
    const dir = freshDir();
    const store = SqliteKeyStore.open(dir);
    const { key } = store.createKey(store.upsertUser(alice), "laptop");
    store.close();
    expect(withKeyStore(dir, (s) => setKeyLimits(s, key.id, { rpm: 30, maxConcurrency: null }))).toBe(
      `${key.id}: concurrency=default rpm=30 tpm=default`,
    );
    expect(withKeyStore(dir, listKeys)).toEqual([`${key.id}  ${key.prefix}  alice@example.test  "laptop"  live  concurrency=default rpm=30 tpm=default`]);
    expect(describeLimits({ maxConcurrency: 4, rpm: null, tpm: 9 })).toBe("concurrency=4 rpm=default tpm=9");
  });

  it("list on a store without keys says so, and where keys come from", () => {
    const dir = freshDir();
    SqliteKeyStore.open(dir).close();
    expect(withKeyStore(dir, listKeys)).toEqual([expect.stringMatching(/^no user API keys in this key store yet: .*\/settings.*--oidc-issuer/)]);
  });

  it("an unknown key id or a missing store is an error that says what to do, and creates nothing", () => {
    const dir = freshDir();
    SqliteKeyStore.open(dir).close();
    expect(() => withKeyStore(dir, (s) => setKeyLimits(s, "key_nope", { rpm: 1 }))).toThrow(/no key key_nope .*keys list/);
    const empty = freshDir();
    expect(() => withKeyStore(empty, listKeys)).toThrow(/no key store at .*--data-dir/);
    expect(readdirSync(empty)).toEqual([]);
  });
});

describe("Users, not only keys, are limited: the key store", () => {
  it("a user holds at most the cap of live keys; a refused create writes nothing, and revoking one makes room", () => {
    const store = SqliteKeyStore.open(freshDir());
    const id = store.upsertUser(alice);
    const made = Array.from({ length: 3 }, (_, i) => store.createKey(id, `k${i}`, 1_000 + i, 3));
    expect(() => store.createKey(id, "fourth", 2_000, 3)).toThrow(KeyCapReached);
    expect(store.listKeys(id)).toHaveLength(3);
    // another user's keys do not count against alice's cap
    store.createKey(store.upsertUser(bob), "bobs", 2_000, 3);
    store.revokeKey(id, made[0]!.key.id, 3_000);
    store.createKey(id, "replacement", 4_000, 3);
    expect(() => store.createKey(id, "fifth", 5_000, 3)).toThrow("this user already has 3 live API keys, the most allowed; revoke one first");
    expect(store.listUsers().map((u) => [u.email, u.liveKeys])).toEqual([["alice@example.test", 3], [null, 1]]);
    store.close();
  });

  it("UserKeys.create applies --max-keys-per-user; its default is 20", () => {
    const store = SqliteKeyStore.open(freshDir());
    const id = store.upsertUser(alice);
    const users = new UserKeys(store, (err) => { throw err; }, 3_600_000);
    expect(users.maxKeysPerUser).toBe(20);
    for (let i = 0; i < 20; i++) users.create(id, `k${i}`);
    expect(() => users.create(id, "k20")).toThrow(KeyCapReached);
    users.close();
    store.close();
  });

  it("a user's overrides are set one by one, null returns to the default; UserKeys re-reads them after LIMITS_REFRESH_MS", () => {
    const store = SqliteKeyStore.open(freshDir());
    const id = store.upsertUser(alice);
    expect(store.userLimits(id)).toEqual(DEFAULTS);
    const users = new UserKeys(store, (err) => { throw err; }, 3_600_000);
    expect(users.userLimits(id, 0)).toEqual(DEFAULTS);
    expect(store.setUserLimits(id, { rpm: 60, maxConcurrency: 3 })).toEqual({ maxConcurrency: 3, rpm: 60, tpm: null });
    expect(store.setUserLimits(id, { rpm: null })).toEqual({ maxConcurrency: 3, rpm: null, tpm: null });
    expect(users.userLimits(id, LIMITS_REFRESH_MS - 1)).toEqual(DEFAULTS);
    expect(users.userLimits(id, LIMITS_REFRESH_MS)).toEqual({ ...DEFAULTS, maxConcurrency: 3 });
    // a key's overrides and its user's are apart, though both are cached side by side
    const { key } = store.createKey(id, "ci");
    expect(users.limits(key.id, LIMITS_REFRESH_MS)).toEqual(DEFAULTS);
    expect(store.userLimits(999)).toBeUndefined();
    expect(store.setUserLimits(999, { rpm: 1 })).toBeUndefined();
    users.close();
    store.close();
  });
});

describe("Users, not only keys, are limited: `svc-gateway users list`, `users limit` and `keys create`", () => {
  it("users list prints id, email, live keys and limits; users limit sets a user's overrides", () => {
    const dir = freshDir();
    const store = SqliteKeyStore.open(dir);
    const id = store.upsertUser(alice);
    store.createKey(id, "laptop");
    store.close();
    expect(withKeyStore(dir, (s) => setUserLimits(s, id, { tpm: 9_000 }))).toBe(`user ${id}: concurrency=default rpm=default tpm=9000`);
    expect(withKeyStore(dir, listUsers)).toEqual([`${id}  alice@example.test  keys=1  concurrency=default rpm=default tpm=9000`]);
    expect(() => withKeyStore(dir, (s) => setUserLimits(s, 42, { rpm: 1 }))).toThrow(/no user 42 .*users list/);
  });

  it("keys create makes a key within the cap; past it the error names the flag and what to do", () => {
    const dir = freshDir();
    const store = SqliteKeyStore.open(dir);
    const id = store.upsertUser(alice);
    store.close();
    const { key, secret } = withKeyStore(dir, (s) => createUserKey(s, id, "cli", 1));
    expect(withKeyStore(dir, (s) => s.liveKey(secretHash(secret)))).toEqual({ keyId: key.id, userId: id });
    expect(() => withKeyStore(dir, (s) => createUserKey(s, id, "cli", 1))).toThrow(
      `--user ${id}: already holds 1 live keys, the cap (--max-keys-per-user); revoke one on the settings page first`,
    );
    expect(() => withKeyStore(dir, (s) => createUserKey(s, 42, "cli", 1))).toThrow(/^--user 42: no such user/);
  });

  it("users list on a store without users says where they come from", () => {
    const dir = freshDir();
    SqliteKeyStore.open(dir).close();
    expect(withKeyStore(dir, listUsers)).toEqual([expect.stringMatching(/^no users in this key store yet: .*--oidc-issuer/)]);
  });
});
