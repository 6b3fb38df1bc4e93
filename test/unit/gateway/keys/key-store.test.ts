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
import { SqliteKeyStore } from "../../../../gateway/keys/sqlite-store.ts";
import { STORE_FILE } from "../../../../gateway/keys/sqlite-schema.ts";
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
  it("secrets are sk-svc_ and 32 random bytes in base64url; the display prefix shows four characters of them", async () => {
    const secret = newSecret();
    expect(secret).toMatch(/^sk-svc_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(secret.slice(7), "base64url")).toHaveLength(32);
    expect(newSecret()).not.toBe(secret);
    expect(displayPrefix(secret)).toBe(`${secret.slice(0, 11)}…`);
    expect(secretHash(secret)).toBe(nodeSha256Hex(secret));
  });

  it("the gateway creates the schema in WAL mode, and reopening migrates nothing twice", async () => {
    const dir = freshDir();
    await SqliteKeyStore.open(dir).close();
    const db = openSqlite(join(dir, STORE_FILE));
    expect(pragmaValue(db, "journal_mode")).toBe("wal");
    expect(pragmaValue(db, "user_version")).toBe(8);
    const tables = db.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all().map((t) => t.name);
    expect(tables).toEqual(["api_keys", "audits", "provider_tokens", "sessions", "usage_days", "users"]);
    db.close();
    await SqliteKeyStore.open(dir).close();
  });

  it("a store written before provider tokens gains them and the usage table on open and keeps every key", async () => {
    const dir = freshDir();
    const store = SqliteKeyStore.open(dir);
    const { secret } = await store.createKey(await store.upsertUser(alice), "old key");
    await store.close();
    // take the file back to schema version 1, as the first release wrote it
    const db = openSqlite(join(dir, STORE_FILE));
    db.exec("DROP TABLE audits; DROP TABLE usage_days; DROP TABLE provider_tokens; ALTER TABLE api_keys DROP COLUMN max_concurrency; ALTER TABLE api_keys DROP COLUMN rpm; ALTER TABLE api_keys DROP COLUMN tpm;");
    db.exec("ALTER TABLE users DROP COLUMN max_concurrency; ALTER TABLE users DROP COLUMN rpm; ALTER TABLE users DROP COLUMN tpm;");
    db.exec("PRAGMA user_version = 1");
    db.close();
    const reopened = SqliteKeyStore.open(dir);
    expect(await reopened.liveKey(secretHash(secret))).toBeDefined();
    expect((await reopened.enrollProvider("mac-1", null)).secret).toMatch(/^svc-prov_/);
    // and the per-day usage table of schema version 3
    await reopened.recordDailyUsage([{ day: "2025-01-01", keyId: "op_x", providerId: "p", requests: 1, promptTokens: 2, completionTokens: 3 }]);
    expect(await reopened.dailyUsage("2025-01-01")).toHaveLength(1);
    // and the per-user overrides of schema version 4
    expect(await reopened.setUserLimits(1, { rpm: 7 })).toEqual({ maxConcurrency: null, rpm: 7, tpm: null });
    await reopened.close();
  });

  it("an override `default` once stored as an empty string (issue 41) reads as the default again after the upgrade", async () => {
    const dir = freshDir();
    const store = SqliteKeyStore.open(dir);
    const userId = await store.upsertUser(alice);
    const { key } = await store.createKey(userId, "laptop");
    await store.close();
    const db = openSqlite(join(dir, STORE_FILE));
    db.exec(`DROP TABLE audits; UPDATE users SET tpm = '', rpm = 5; UPDATE api_keys SET max_concurrency = ''; PRAGMA user_version = 5`);
    db.close();
    const reopened = SqliteKeyStore.open(dir);
    expect(await reopened.userLimits(userId)).toEqual({ maxConcurrency: null, rpm: 5, tpm: null });
    expect(await reopened.keyLimits(key.id)).toEqual({ maxConcurrency: null, rpm: null, tpm: null });
    await reopened.close();
  });

  it("a store written by a newer gateway is refused rather than misread", async () => {
    const dir = freshDir();
    await SqliteKeyStore.open(dir).close();
    const db = openSqlite(join(dir, STORE_FILE));
    db.exec("PRAGMA user_version = 99");
    db.close();
    expect(() => SqliteKeyStore.open(dir)).toThrow(/schema version 99, newer than this gateway knows/);
  });

  it("only the SHA-256 of a secret is stored, and a key is found by an index lookup on it, never by scanning", async () => {
    const dir = freshDir();
    const store = SqliteKeyStore.open(dir);
    const userId = await store.upsertUser(alice);
    const { key, secret } = await store.createKey(userId, "laptop");
    expect(await store.liveKey(secretHash(secret))).toEqual({ keyId: key.id, userId });
    expect(await store.liveKey(secretHash(newSecret()))).toBeUndefined();
    await store.close();
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

  it("users are one per issuer and subject; a later sign-in refreshes email and name", async () => {
    const store = SqliteKeyStore.open(freshDir());
    const id = await store.upsertUser(alice);
    expect(await store.upsertUser({ ...alice, email: "new@example.test" })).toBe(id);
    await store.createSession("s", id, Date.now() + 60_000);
    expect(await store.sessionUser("s")).toEqual({ id, email: "new@example.test", name: "Alice" });
    expect(await store.upsertUser({ ...alice, issuer: "https://other.example" })).not.toBe(id);
    await store.close();
  });

  it("a user's keys are theirs alone: listing, looking up and revoking another user's key find nothing", async () => {
    const store = SqliteKeyStore.open(freshDir());
    const [a, b] = [await store.upsertUser(alice), await store.upsertUser(bob)];
    const { key, secret } = await store.createKey(a, "server");
    expect((await store.listKeys(a)).map((k) => k.id)).toEqual([key.id]);
    expect(await store.listKeys(b)).toEqual([]);
    expect(await store.ownedKey(b, key.id)).toBeUndefined();
    expect(await store.revokeKey(b, key.id)).toBeUndefined();
    expect(await store.liveKey(secretHash(secret))).toBeDefined();
    expect(await store.revokeKey(a, key.id)).toBe(secretHash(secret));
    expect(await store.revokeKey(a, key.id)).toBeUndefined(); // once
    expect(await store.liveKey(secretHash(secret))).toBeUndefined();
    expect(await store.ownedKey(a, key.id)).toMatchObject({ name: "server", revokedAt: expect.any(Number) });
    await store.close();
  });

  it("activity batches add up per key and keep the latest use", async () => {
    const store = SqliteKeyStore.open(freshDir());
    const { key } = await store.createKey(await store.upsertUser(alice), "k");
    await store.recordActivity(new Map([[key.id, { lastUsedAt: 2_000, requests: 2, promptTokens: 10, completionTokens: 4 }]]));
    await store.recordActivity(new Map([[key.id, { lastUsedAt: 1_000, requests: 1, promptTokens: 1, completionTokens: 1 }]]));
    expect((await store.listKeys(1))[0]).toMatchObject({ lastUsedAt: 2_000, requests: 3, promptTokens: 11, completionTokens: 5 });
    await store.close();
  });
});

describe("Provider enrollment tokens in the key store", () => {
  it("a token is svc-prov_ and 32 random bytes; only its hash is stored, and the listing never shows it", async () => {
    const dir = freshDir();
    const store = SqliteKeyStore.open(dir);
    const { token, secret } = await store.enrollProvider("mac-studio", null, 1_000);
    expect(secret).toMatch(/^svc-prov_[A-Za-z0-9_-]{43}$/);
    expect(token).toMatchObject({ name: "mac-studio", prefix: `${secret.slice(0, 13)}…`, createdAt: 1_000, expiresAt: null, revokedAt: null });
    expect(token.id).toMatch(/^ptk_[0-9a-f]{24}$/);
    expect(await store.listProviderTokens()).toEqual([token]);
    await store.close();
    expect(readFileSync(join(dir, STORE_FILE)).includes(secret)).toBe(false);
  });

  it("a live token is found by its hash and noted as used; revoked, expired and unknown ones are not", async () => {
    const store = SqliteKeyStore.open(freshDir());
    const live = await store.enrollProvider("a", null, 1_000);
    const expiring = await store.enrollProvider("b", 5_000, 1_000);
    const revoked = await store.enrollProvider("c", null, 1_000);
    expect(await store.revokeProviderToken(revoked.token.id, 2_000)).toBe(true);
    expect(await store.revokeProviderToken(revoked.token.id, 2_000)).toBe(false);
    expect(await store.liveProviderToken(secretHash(live.secret), 3_000)).toMatchObject({ id: live.token.id, lastUsedAt: 3_000 });
    expect((await store.liveProviderToken(secretHash(expiring.secret), 4_999))?.id).toBe(expiring.token.id);
    expect(await store.liveProviderToken(secretHash(expiring.secret), 5_000)).toBeUndefined();
    expect(await store.liveProviderToken(secretHash(revoked.secret), 3_000)).toBeUndefined();
    expect(await store.liveProviderToken(secretHash("svc-prov_nothing"), 3_000)).toBeUndefined();
    // the ids the coordinator's enrollment watch reads every second: the same live set
    expect((await store.liveProviderTokenIds(4_999)).sort()).toEqual([live.token.id, expiring.token.id].sort());
    expect(await store.liveProviderTokenIds(5_000)).toEqual([live.token.id]);
    await store.close();
  });
});

const DEFAULTS = { maxConcurrency: null, rpm: null, tpm: null };

describe("Rate limits: per-key overrides in the key store", () => {
  it("a new key follows the operator's defaults; overrides are set one by one and null returns to the default", async () => {
    const store = SqliteKeyStore.open(freshDir());
    const { key } = await store.createKey(await store.upsertUser(alice), "ci");
    expect(await store.keyLimits(key.id)).toEqual(DEFAULTS);
    expect(await store.setKeyLimits(key.id, { rpm: 60 })).toEqual({ ...DEFAULTS, rpm: 60 });
    expect(await store.setKeyLimits(key.id, { maxConcurrency: 2, tpm: 10_000 })).toEqual({ maxConcurrency: 2, rpm: 60, tpm: 10_000 });
    expect(await store.setKeyLimits(key.id, { rpm: null, tpm: undefined })).toEqual({ maxConcurrency: 2, rpm: null, tpm: 10_000 });
    expect(await store.setKeyLimits(key.id, {})).toEqual({ maxConcurrency: 2, rpm: null, tpm: 10_000 });
    expect(await store.keyLimits("key_unknown")).toBeUndefined();
    expect(await store.setKeyLimits("key_unknown", { rpm: 1 })).toBeUndefined();
    await store.close();
  });

  it("the operator's listing holds every user's keys with owner and limits, never a secret", async () => {
    const store = SqliteKeyStore.open(freshDir());
    const aliceId = await store.upsertUser(alice);
    const older = await store.createKey(aliceId, "old", 1_000);
    const newer = await store.createKey(await store.upsertUser({ ...alice, subject: "bob", email: null, name: "Bob" }), "new", 2_000);
    await store.setKeyLimits(older.key.id, { tpm: 500 });
    await store.revokeKey(aliceId, older.key.id, 3_000);
    const listing = await store.listAllKeys();
    expect(listing.map((k) => [k.id, k.owner, k.revokedAt, k.limits])).toEqual([
      [newer.key.id, "Bob", null, DEFAULTS],
      [older.key.id, "alice@example.test", 3_000, { ...DEFAULTS, tpm: 500 }],
    ]);
    expect(JSON.stringify(listing)).not.toContain(older.secret);
    await store.close();
  });

  it("UserKeys reads a key's overrides with the key, then again in the background once LIMITS_REFRESH_MS old", async () => {
    const store = SqliteKeyStore.open(freshDir());
    const { key, secret } = await store.createKey(await store.upsertUser(alice), "ci");
    await store.setKeyLimits(key.id, { rpm: 9 });
    const users = new UserKeys(store, (err) => { throw err; }, 3_600_000);
    await users.verify(secret); // the first request with a key is held to its overrides already
    const readAt = Date.now();
    expect(users.limits(key.id, readAt)).toEqual({ ...DEFAULTS, rpm: 9 });
    await store.setKeyLimits(key.id, { rpm: 5 }); // as `svc-gateway keys limit` does from another process
    expect(users.limits(key.id, readAt + LIMITS_REFRESH_MS - 1_000)).toEqual({ ...DEFAULTS, rpm: 9 });
    // once stale, the last answer stands while a fresh read runs, off the request's path
    expect(users.limits(key.id, readAt + LIMITS_REFRESH_MS + 1_000)).toEqual({ ...DEFAULTS, rpm: 9 });
    await expect.poll(() => users.limits(key.id, Date.now())).toEqual({ ...DEFAULTS, rpm: 5 });
    await users.close();
  });
});

describe("Rate limits: `svc-gateway keys list` and `keys limit`", () => {
  it("list prints one line per key; limit sets overrides and prints what the key has now", async () => {
    const dir = freshDir();
    const store = SqliteKeyStore.open(dir);
    const { key } = await store.createKey(await store.upsertUser(alice), "laptop");
    await store.close();
    expect(await withKeyStore(dir, (s) => setKeyLimits(s, key.id, { rpm: 30, maxConcurrency: null }))).toBe(
      `${key.id}: concurrency=default rpm=30 tpm=default`,
    );
    expect(await withKeyStore(dir, listKeys)).toEqual([`${key.id}  ${key.prefix}  alice@example.test  "laptop"  live  concurrency=default rpm=30 tpm=default`]);
    expect(describeLimits({ maxConcurrency: 4, rpm: null, tpm: 9 })).toBe("concurrency=4 rpm=default tpm=9");
  });

  it("list on a store without keys says so, and where keys come from", async () => {
    const dir = freshDir();
    await SqliteKeyStore.open(dir).close();
    expect(await withKeyStore(dir, listKeys)).toEqual([expect.stringMatching(/^no user API keys in this key store yet: .*\/settings.*--oidc-issuer/)]);
  });

  it("an unknown key id or a missing store is an error that says what to do, and creates nothing", async () => {
    const dir = freshDir();
    await SqliteKeyStore.open(dir).close();
    await expect(withKeyStore(dir, (s) => setKeyLimits(s, "key_nope", { rpm: 1 }))).rejects.toThrow(/no key key_nope .*keys list/);
    const empty = freshDir();
    await expect(withKeyStore(empty, listKeys)).rejects.toThrow(/no key store at .*--data-dir/);
    expect(readdirSync(empty)).toEqual([]);
  });
});

describe("Users, not only keys, are limited: the key store", () => {
  it("a user holds at most the cap of live keys; a refused create writes nothing, and revoking one makes room", async () => {
    const store = SqliteKeyStore.open(freshDir());
    const id = await store.upsertUser(alice);
    const made = await Promise.all(Array.from({ length: 3 }, (_, i) => store.createKey(id, `k${i}`, 1_000 + i, 3)));
    await expect(store.createKey(id, "fourth", 2_000, 3)).rejects.toThrow(KeyCapReached);
    expect(await store.listKeys(id)).toHaveLength(3);
    // another user's keys do not count against alice's cap
    await store.createKey(await store.upsertUser(bob), "bobs", 2_000, 3);
    await store.revokeKey(id, made[0]!.key.id, 3_000);
    await store.createKey(id, "replacement", 4_000, 3);
    await expect(store.createKey(id, "fifth", 5_000, 3)).rejects.toThrow("this user already has 3 live API keys, the most allowed; revoke one first");
    expect((await store.listUsers()).map((u) => [u.email, u.liveKeys])).toEqual([["alice@example.test", 3], [null, 1]]);
    await store.close();
  });

  it("UserKeys.create applies --max-keys-per-user; its default is 20", async () => {
    const store = SqliteKeyStore.open(freshDir());
    const id = await store.upsertUser(alice);
    const users = new UserKeys(store, (err) => { throw err; }, 3_600_000);
    expect(users.maxKeysPerUser).toBe(20);
    for (let i = 0; i < 20; i++) await users.create(id, `k${i}`);
    await expect(users.create(id, "k20")).rejects.toThrow(KeyCapReached);
    await users.close();
    await store.close();
  });

  it("a user's overrides are set one by one, null returns to the default; UserKeys re-reads them after LIMITS_REFRESH_MS", async () => {
    const store = SqliteKeyStore.open(freshDir());
    const id = await store.upsertUser(alice);
    expect(await store.userLimits(id)).toEqual(DEFAULTS);
    const users = new UserKeys(store, (err) => { throw err; }, 3_600_000);
    const { key, secret } = await store.createKey(id, "ci");
    await users.verify(secret);
    expect(users.userLimits(id)).toEqual(DEFAULTS);
    expect(await store.setUserLimits(id, { rpm: 60, maxConcurrency: 3 })).toEqual({ maxConcurrency: 3, rpm: 60, tpm: null });
    expect(await store.setUserLimits(id, { rpm: null })).toEqual({ maxConcurrency: 3, rpm: null, tpm: null });
    expect(users.userLimits(id)).toEqual(DEFAULTS);
    users.userLimits(id, Date.now() + LIMITS_REFRESH_MS);
    await expect.poll(() => users.userLimits(id)).toEqual({ ...DEFAULTS, maxConcurrency: 3 });
    // a key's overrides and its user's are apart, though both are cached side by side
    expect(users.limits(key.id)).toEqual(DEFAULTS);
    expect(await store.userLimits(999)).toBeUndefined();
    expect(await store.setUserLimits(999, { rpm: 1 })).toBeUndefined();
    await users.close();
    await store.close();
  });
});

describe("Users, not only keys, are limited: `svc-gateway users list`, `users limit` and `keys create`", () => {
  it("users list prints id, email, live keys and limits; users limit sets a user's overrides", async () => {
    const dir = freshDir();
    const store = SqliteKeyStore.open(dir);
    const id = await store.upsertUser(alice);
    await store.createKey(id, "laptop");
    await store.close();
    expect(await withKeyStore(dir, (s) => setUserLimits(s, id, { tpm: 9_000 }))).toBe(`user ${id}: concurrency=default rpm=default tpm=9000`);
    expect(await withKeyStore(dir, listUsers)).toEqual([`${id}  alice@example.test  keys=1  concurrency=default rpm=default tpm=9000`]);
    await expect(withKeyStore(dir, (s) => setUserLimits(s, 42, { rpm: 1 }))).rejects.toThrow(/no user 42 .*users list/);
  });

  it("keys create makes a key within the cap; past it the error names the flag and what to do", async () => {
    const dir = freshDir();
    const store = SqliteKeyStore.open(dir);
    const id = await store.upsertUser(alice);
    await store.close();
    const { key, secret } = await withKeyStore(dir, (s) => createUserKey(s, id, "cli", 1));
    expect(await withKeyStore(dir, (s) => s.liveKey(secretHash(secret)))).toEqual({ keyId: key.id, userId: id });
    await expect(withKeyStore(dir, (s) => createUserKey(s, id, "cli", 1))).rejects.toThrow(
      `--user ${id}: already holds 1 live keys, the cap (--max-keys-per-user); revoke one on the settings page first`,
    );
    await expect(withKeyStore(dir, (s) => createUserKey(s, 42, "cli", 1))).rejects.toThrow(/^--user 42: no such user/);
  });

  it("users list on a store without users says where they come from", async () => {
    const dir = freshDir();
    await SqliteKeyStore.open(dir).close();
    expect(await withKeyStore(dir, listUsers)).toEqual([expect.stringMatching(/^no users in this key store yet: .*--oidc-issuer/)]);
  });
});
