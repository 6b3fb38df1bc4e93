// Design §4 point 2, the audits' identities on a real SQLite key store and a fake clock: a pool of keys of the user
// svc-auditor, picked at random per audit, each retired (revoked and replaced) after a lifetime drawn from 1–14 days,
// kept across a restart within that lifetime, and shared by two gateways on one store rather than over its cap.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { AUDITOR_USER, AuditIdentities, IDENTITY_LIFETIME_MS } from "../../../../gateway/audit/identities.ts";
import { cacheOwners } from "../../../../gateway/keys/cache-scope.ts";
import { SqliteKeyStore } from "../../../../gateway/keys/sqlite-store.ts";
import { fakeDice } from "../../../fixtures/fake-dice.ts";

const dir = mkdtempSync(join(tmpdir(), "svc-identities-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const DAY = 86_400_000;
const START = Date.UTC(2026, 0, 1);
let stores = 0;
/** A fresh SQLite key store, and dice whose clock reads START. */
function freshStore(seed: number) {
  const path = join(dir, String(stores++));
  mkdirSync(path);
  const dice = fakeDice(seed);
  dice.t = START;
  return { store: SqliteKeyStore.open(path), dice };
}
/** Every key of the store's one user, svc-auditor: live and revoked. */
async function auditorKeys(store: SqliteKeyStore) {
  return store.listKeys((await store.listUsers())[0]!.id);
}

describe("§4 point 2: the pool", () => {
  it("holds --audit-identities keys of the store user svc-auditor, and each audit takes one of them at random", async () => {
    const { store, dice } = freshStore(1);
    const identities = await AuditIdentities.open(store, 16, dice);
    const users = await store.listUsers();
    expect(users.map((u) => [u.name, u.liveKeys])).toEqual([[AUDITOR_USER.name, 16]]);
    const live = (await store.listKeys(users[0]!.id)).filter((k) => k.revokedAt === null).map((k) => k.id);
    expect(identities.keyIds().sort()).toEqual(live.sort());
    const picked = new Map<string, number>();
    for (let i = 0; i < 1_600; i++) {
      const principal = await identities.pick();
      expect(principal).toEqual({ kind: "user", keyId: expect.any(String), userId: users[0]!.id });
      picked.set(principal.keyId, (picked.get(principal.keyId) ?? 0) + 1);
    }
    // every identity is used, none much more than another (100 each expected)
    expect([...picked.keys()].sort()).toEqual(live.sort());
    for (const count of picked.values()) expect(count).toBeGreaterThan(50);
    // the cache owner a provider sees is the key's: 16 owners, not one
    const ownerOf = cacheOwners("secret");
    expect(new Set([...picked.keys()].map(ownerOf)).size).toBe(16);
    await store.close();
  });
});

describe("§4 point 2: lifetimes", () => {
  it("each identity is retired after a lifetime drawn from 1–14 days: revoked in the store, a fresh key in its place", async () => {
    const { store, dice } = freshStore(2);
    const identities = await AuditIdentities.open(store, 16, dice);
    const born = new Map(identities.keyIds().map((id) => [id, START]));
    const lived: number[] = [];
    // an audit an hour for 60 days: each key's lifetime is when it left the pool, to the hour
    for (dice.t = START; dice.t < START + 60 * DAY; dice.t += 3_600_000) {
      await identities.pick();
      const now = new Set(identities.keyIds());
      expect(now.size).toBe(16);
      for (const [id, at] of born) {
        if (now.has(id)) continue;
        lived.push(dice.t - at);
        born.delete(id);
      }
      for (const id of now) if (!born.has(id)) born.set(id, dice.t);
    }
    expect(lived.length).toBeGreaterThan(60);
    expect(Math.min(...lived)).toBeGreaterThanOrEqual(IDENTITY_LIFETIME_MS.min);
    expect(Math.max(...lived)).toBeLessThanOrEqual(IDENTITY_LIFETIME_MS.max + 3_600_000);
    // drawn, not one fixed lifetime: they spread over the range
    expect(Math.max(...lived) - Math.min(...lived)).toBeGreaterThan(10 * DAY);
    // every retired key is revoked in the store; only the pool's are live
    const keys = await auditorKeys(store);
    expect(keys.filter((k) => k.revokedAt === null).map((k) => k.id).sort()).toEqual(identities.keyIds().sort());
    expect(keys.filter((k) => k.revokedAt !== null)).toHaveLength(lived.length);
    await store.close();
  });

  it("a restart keeps the live keys within their lifetime and retires those past 14 days", async () => {
    const { store, dice } = freshStore(3);
    const first = await AuditIdentities.open(store, 8, dice);
    const before = first.keyIds();
    // a day on: still within every key's lifetime (at least one day), so all are kept
    dice.t = START + DAY - 1;
    const again = await AuditIdentities.open(store, 8, dice);
    expect(again.keyIds().sort()).toEqual([...before].sort());
    // 14 days on: every one of them is past its lifetime
    dice.t = START + 14 * DAY + 1;
    const later = await AuditIdentities.open(store, 8, dice);
    expect(later.keyIds().filter((id) => before.includes(id))).toEqual([]);
    expect((await auditorKeys(store)).filter((k) => k.revokedAt === null).map((k) => k.id).sort()).toEqual(later.keyIds().sort());
    await store.close();
  });

  it("two gateways on one store share the user's keys rather than exceed the pool", async () => {
    const { store, dice } = freshStore(4);
    // at once: each finds no key, then one of them reaches the cap first
    const [a, b] = await Promise.all([AuditIdentities.open(store, 4, dice), AuditIdentities.open(store, 4, dice)]);
    expect(b.keyIds().sort()).toEqual(a.keyIds().sort());
    expect(a.keyIds()).toHaveLength(4);
    // later, the other one's start finds them live
    expect((await AuditIdentities.open(store, 4, dice)).keyIds().sort()).toEqual(a.keyIds().sort());
    await store.close();
  });
});

describe("§4 point 2: a pool the cap leaves empty", () => {
  it("an idle replica's keys past their lifetime are retired, so a pick still gets a fresh identity", async () => {
    const { store, dice } = freshStore(5);
    // this gateway holds 2 identities; another on the same store, with a pool of 4, takes those and makes 2 more
    const small = await AuditIdentities.open(store, 2, dice);
    const big = await AuditIdentities.open(store, 4, dice);
    const others = big.keyIds().filter((id) => !small.keyIds().includes(id));
    expect(others).toHaveLength(2);
    // 14 days on, the big one idle: the small one retires its own, and the cap of 2 is held by the big one's stale keys
    dice.t = START + 14 * DAY + 1;
    const principal = await small.pick();
    expect(small.keyIds()).toHaveLength(2);
    expect(small.keyIds()).toContain(principal.keyId);
    const keys = await auditorKeys(store);
    expect(keys.filter((k) => k.revokedAt === null).map((k) => k.id).sort()).toEqual(small.keyIds().sort());
    for (const id of others) expect(keys.find((k) => k.id === id)!.revokedAt).toBe(dice.t);
    await store.close();
  });
});

describe("§4 point 2: a failed audit's identity", () => {
  it("is retired at once: revoked in the store, out of the pool, a fresh key in its place, never picked again", async () => {
    const { store, dice } = freshStore(6);
    const identities = await AuditIdentities.open(store, 4, dice);
    const failed = await identities.pick();
    dice.t += 60_000;
    await identities.retire(failed.keyId);
    expect(identities.keyIds()).toHaveLength(4);
    expect(identities.keyIds()).not.toContain(failed.keyId);
    const keys = await auditorKeys(store);
    expect(keys.find((k) => k.id === failed.keyId)!.revokedAt).toBe(dice.t);
    expect(keys.filter((k) => k.revokedAt === null).map((k) => k.id).sort()).toEqual(identities.keyIds().sort());
    for (let i = 0; i < 200; i++) expect((await identities.pick()).keyId).not.toBe(failed.keyId);
    await store.close();
  });
});
