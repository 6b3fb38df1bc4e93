// SPEC §5's key store on a real SQLite file in a temp dir: schema and migration, secrets kept only as hashes
// and found through an index, keys scoped to their owner, revocation and sessions.
import Database from "better-sqlite3";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { displayPrefix, newSecret, secretHash } from "../gateway/keys/secret.ts";
import { SqliteKeyStore, STORE_FILE } from "../gateway/keys/sqlite-store.ts";
import { sha256Hex } from "../src/hash.ts";

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
    expect(secretHash(secret)).toBe(sha256Hex(secret));
  });

  it("the gateway creates the schema in WAL mode, and reopening migrates nothing twice", () => {
    const dir = freshDir();
    SqliteKeyStore.open(dir).close();
    const db = new Database(join(dir, STORE_FILE));
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(db.pragma("user_version", { simple: true })).toBe(2);
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all();
    expect(tables).toEqual(["api_keys", "provider_tokens", "sessions", "users"]);
    db.close();
    SqliteKeyStore.open(dir).close();
  });

  it("a store written before provider tokens gains them on open and keeps every key", () => {
    const dir = freshDir();
    const store = SqliteKeyStore.open(dir);
    const { secret } = store.createKey(store.upsertUser(alice), "old key");
    store.close();
    // take the file back to schema version 1, as the first release wrote it
    const db = new Database(join(dir, STORE_FILE));
    db.exec("DROP TABLE provider_tokens; ALTER TABLE api_keys DROP COLUMN max_concurrency; ALTER TABLE api_keys DROP COLUMN rpm; ALTER TABLE api_keys DROP COLUMN tpm;");
    db.pragma("user_version = 1");
    db.close();
    const reopened = SqliteKeyStore.open(dir);
    expect(reopened.liveKey(secretHash(secret))).toBeDefined();
    expect(reopened.enrollProvider("mac-1", null).secret).toMatch(/^svc-prov_/);
    reopened.close();
  });

  it("a store written by a newer gateway is refused rather than misread", () => {
    const dir = freshDir();
    SqliteKeyStore.open(dir).close();
    const db = new Database(join(dir, STORE_FILE));
    db.pragma("user_version = 99");
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
    const db = new Database(join(dir, STORE_FILE), { readonly: true });
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
    store.close();
  });
});
