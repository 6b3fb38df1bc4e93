// SPEC §5's key store as a contract (DESIGN §7): one describe, run against both implementations, the SQLite file
// under a temp dir and a real PostgreSQL started for this file. Whatever sits above the seam sees the same answers:
// users, keys by owner and by hash, revocation heard by a watcher, sessions, usage, overrides, enrollment tokens,
// and the rows `keys migrate` copies. And the claim epochs only the shared database gives (coordinators on NATS).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KeyCapReached, STORE_TABLES, type KeyStore } from "../../gateway/keys/key-store.ts";
import { PostgresKeyStore } from "../../gateway/keys/postgres-store.ts";
import { newSecret, secretHash } from "../../gateway/keys/secret.ts";
import { openKeyStore } from "../../gateway/keys/open-store.ts";
import { startPostgres, type Postgres } from "../../harness/postgres.ts";

let postgres: Postgres;
const dir = mkdtempSync(join(tmpdir(), "svc-contract-"));
let dirs = 0;

beforeAll(async () => {
  postgres = await startPostgres();
}, 120_000);

afterAll(async () => {
  await postgres?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const IMPLEMENTATIONS: [string, () => Promise<KeyStore>][] = [
  ["SqliteKeyStore", () => openKeyStore({ dataDir: join(dir, String(++dirs)) })],
  ["PostgresKeyStore", async () => PostgresKeyStore.open(await postgres.freshDatabase())],
];

const alice = { issuer: "https://id.example", subject: "alice", email: "Alice@Example.test", name: "Alice" };
const bob = { issuer: "https://id.example", subject: "bob", email: null, name: null };
const DEFAULTS = { maxConcurrency: null, rpm: null, tpm: null };

describe.each(IMPLEMENTATIONS)("§5 the KeyStore contract: %s", (_name, open) => {
  it("users are one per issuer and subject, found by email without case; sessions end at expiry or deletion", async () => {
    const store = await open();
    const id = await store.upsertUser(alice);
    expect(await store.upsertUser({ ...alice, name: "Alice B" })).toBe(id);
    expect(await store.upsertUser({ ...alice, issuer: "https://other.example" })).not.toBe(id);
    expect((await store.usersByEmail("alice@example.TEST")).map((u) => u.name)).toEqual(["Alice B", "Alice"]);
    await store.createSession("s1", id, 10_000, 1_000);
    expect(await store.sessionUser("s1", 9_999)).toEqual({ id, email: "Alice@Example.test", name: "Alice B" });
    expect(await store.sessionUser("s1", 10_000)).toBeUndefined();
    await store.createSession("s2", id, 50_000, 1_000);
    await store.deleteSession("s2");
    expect(await store.sessionUser("s2", 2_000)).toBeUndefined();
    await store.close();
  });

  it("a key is found by the SHA-256 of its secret, is its owner's alone, and is revoked once", async () => {
    const store = await open();
    const [a, b] = [await store.upsertUser(alice), await store.upsertUser(bob)];
    const { key, secret } = await store.createKey(a, "server", 1_000);
    expect(secret).toMatch(/^sk-svc_[A-Za-z0-9_-]{43}$/);
    expect(await store.liveKey(secretHash(secret))).toEqual({ keyId: key.id, userId: a });
    expect(await store.liveKey(secretHash(newSecret()))).toBeUndefined();
    expect((await store.listKeys(a)).map((k) => k.id)).toEqual([key.id]);
    expect(await store.listKeys(b)).toEqual([]);
    expect(await store.ownedKey(b, key.id)).toBeUndefined();
    expect(await store.revokeKey(b, key.id)).toBeUndefined();
    expect(await store.revokeKey(a, key.id, 2_000)).toBe(secretHash(secret));
    expect(await store.revokeKey(a, key.id)).toBeUndefined();
    expect(await store.liveKey(secretHash(secret))).toBeUndefined();
    expect(await store.ownedKey(a, key.id)).toMatchObject({ name: "server", createdAt: 1_000, revokedAt: 2_000 });
    // the operator's revoke needs no owner
    const other = await store.createKey(b, "bobs");
    expect(await store.revokeAnyKey(other.key.id)).toBe(secretHash(other.secret));
    expect(await store.revokeAnyKey(other.key.id)).toBeUndefined();
    await store.close();
  });

  it("a revocation made through another connection reaches the watcher within a second", async () => {
    const store = await open();
    const { key, secret } = await store.createKey(await store.upsertUser(alice), "k");
    const heard: string[] = [];
    await store.watchRevocations((hash) => heard.push(hash));
    await store.revokeAnyKey(key.id);
    await expect.poll(() => heard, { timeout: 1_000 }).toContain(secretHash(secret));
    await store.close();
  });

  it("a user holds at most the cap of live keys; a refused create writes nothing", async () => {
    const store = await open();
    const id = await store.upsertUser(alice);
    for (let i = 0; i < 3; i++) await store.createKey(id, `k${i}`, 1_000 + i, 3);
    await expect(store.createKey(id, "fourth", 2_000, 3)).rejects.toThrow(KeyCapReached);
    expect(await store.listKeys(id)).toHaveLength(3);
    expect((await store.listUsers()).map((u) => [u.email, u.liveKeys, u.limits])).toEqual([["Alice@Example.test", 3, DEFAULTS]]);
    await store.close();
  });

  it("activity and per-day usage add up; a user reads only their own keys' days", async () => {
    const store = await open();
    const [a, b] = [await store.upsertUser(alice), await store.upsertUser(bob)];
    const { key } = await store.createKey(a, "k");
    const bobs = await store.createKey(b, "b");
    await store.recordActivity(new Map([[key.id, { lastUsedAt: 2_000, requests: 2, promptTokens: 10, completionTokens: 4 }]]));
    await store.recordActivity(new Map([[key.id, { lastUsedAt: 1_000, requests: 1, promptTokens: 1, completionTokens: 1 }]]));
    expect((await store.listKeys(a))[0]).toMatchObject({ lastUsedAt: 2_000, requests: 3, promptTokens: 11, completionTokens: 5 });
    const day = { day: "2025-03-01", providerId: "p", requests: 1, promptTokens: 2, completionTokens: 3 };
    await store.recordDailyUsage([{ ...day, keyId: key.id }, { ...day, keyId: bobs.key.id }, { ...day, keyId: "op_0123456789abcdef" }]);
    await store.recordDailyUsage([{ ...day, keyId: key.id }]);
    expect(await store.dailyUsage("2025-03-01", a)).toEqual([{ ...day, keyId: key.id, requests: 2, promptTokens: 4, completionTokens: 6 }]);
    expect(await store.dailyUsage("2025-03-01")).toHaveLength(3);
    expect(await store.dailyUsage("2025-03-02")).toEqual([]);
    await store.close();
  });

  it("a key's and a user's overrides are set one by one; null returns to the default; unknown ids find nothing", async () => {
    const store = await open();
    const id = await store.upsertUser(alice);
    const { key } = await store.createKey(id, "ci");
    expect(await store.keyLimits(key.id)).toEqual(DEFAULTS);
    expect(await store.setKeyLimits(key.id, { rpm: 60 })).toEqual({ ...DEFAULTS, rpm: 60 });
    expect(await store.setKeyLimits(key.id, { maxConcurrency: 2, rpm: null })).toEqual({ maxConcurrency: 2, rpm: null, tpm: null });
    expect(await store.setKeyLimits(key.id, {})).toEqual({ maxConcurrency: 2, rpm: null, tpm: null });
    expect(await store.setUserLimits(id, { tpm: 9_000 })).toEqual({ ...DEFAULTS, tpm: 9_000 });
    expect(await store.keyLimits("key_unknown")).toBeUndefined();
    expect(await store.setKeyLimits("key_unknown", { rpm: 1 })).toBeUndefined();
    expect(await store.userLimits(999)).toBeUndefined();
    const [listed] = await store.listAllKeys();
    expect(listed).toMatchObject({ id: key.id, userId: id, owner: "Alice@Example.test", limits: { maxConcurrency: 2, rpm: null, tpm: null } });
    await store.close();
  });

  it("an enrollment token is live until revoked or expired, and is noted as used", async () => {
    const store = await open();
    const live = await store.enrollProvider("a", null, 1_000);
    const expiring = await store.enrollProvider("b", 5_000, 1_000);
    expect(live.secret).toMatch(/^svc-prov_[A-Za-z0-9_-]{43}$/);
    expect(await store.liveProviderToken(secretHash(live.secret), 3_000)).toMatchObject({ id: live.token.id, lastUsedAt: 3_000 });
    expect(await store.liveProviderToken(secretHash(expiring.secret), 5_000)).toBeUndefined();
    expect((await store.liveProviderTokenIds(4_999)).sort()).toEqual([live.token.id, expiring.token.id].sort());
    expect(await store.revokeProviderToken(live.token.id, 6_000)).toBe(true);
    expect(await store.revokeProviderToken(live.token.id, 6_000)).toBe(false);
    expect(await store.liveProviderTokenIds(4_999)).toEqual([expiring.token.id]);
    expect((await store.listProviderTokens()).map((t) => [t.name, t.revokedAt]).sort()).toEqual([["a", 6_000], ["b", null]]);
    await store.close();
  });

  it("every table's rows copy into an empty store of either kind, and the copy answers as the original", async () => {
    const from = await open();
    const id = await from.upsertUser(alice);
    const { key, secret } = await from.createKey(id, "moved");
    await from.setKeyLimits(key.id, { rpm: 7 });
    await from.enrollProvider("mac", null);
    await from.recordDailyUsage([{ day: "2025-03-01", keyId: key.id, providerId: "p", requests: 1, promptTokens: 2, completionTokens: 3 }]);
    for (const [, openTarget] of IMPLEMENTATIONS) {
      const to = await openTarget();
      for (const table of STORE_TABLES) await to.importRows(table, await from.exportRows(table));
      expect(await to.liveKey(secretHash(secret))).toEqual({ keyId: key.id, userId: id });
      expect(await to.keyLimits(key.id)).toEqual({ ...DEFAULTS, rpm: 7 });
      expect(await to.dailyUsage("2025-03-01", id)).toHaveLength(1);
      expect(await to.listProviderTokens()).toEqual(await from.listProviderTokens());
      // a user made after the copy gets a new id, not one of the copied ones
      expect(await to.upsertUser(bob)).toBeGreaterThan(id);
      await to.close();
    }
    await from.close();
  });
});

describe("Replicas on NATS: claim epochs from the shared database", () => {
  it("two coordinators' stores on one database take epochs in the order they ask, never the same twice; SQLite gives none", async () => {
    const database = await postgres.freshDatabase();
    const [one, two] = [await PostgresKeyStore.open(database), await PostgresKeyStore.open(database)];
    const [first, second] = [one.claimEpochs(), two.claimEpochs()];
    const taken: number[] = [];
    for (let i = 0; i < 5; i++) taken.push(await first.next(), await second.next());
    expect(taken).toEqual([...taken].sort((x, y) => x - y));
    expect(new Set(taken).size).toBe(taken.length);
    const together = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? first : second).next()));
    expect(new Set([...taken, ...together]).size).toBe(30);
    expect(Math.min(...together)).toBeGreaterThan(Math.max(...taken));
    await Promise.all([one.close(), two.close()]);
    const sqlite = await openKeyStore({ dataDir: join(dir, String(++dirs)) });
    expect(sqlite.claimEpochs).toBeUndefined();
    await sqlite.close();
  });

  it("gateways on one database share one secret of a name: the first to ask keeps what it made, also when they ask at once; SQLite has none", async () => {
    const database = await postgres.freshDatabase();
    const stores = await Promise.all(Array.from({ length: 3 }, () => PostgresKeyStore.open(database)));
    const together = await Promise.all(stores.map((store, i) => store.sharedSecret("cache-scope", `made-by-${i}`)));
    expect(new Set(together).size).toBe(1);
    expect(["made-by-0", "made-by-1", "made-by-2"]).toContain(together[0]);
    expect(await stores[1]!.sharedSecret("cache-scope", "made-later")).toBe(together[0]);
    expect(await stores[2]!.sharedSecret("another-name", "its-own")).toBe("its-own");
    await Promise.all(stores.map((store) => store.close()));
    const sqlite = await openKeyStore({ dataDir: join(dir, String(++dirs)) });
    expect(sqlite.sharedSecret).toBeUndefined();
    await sqlite.close();
  });
});
