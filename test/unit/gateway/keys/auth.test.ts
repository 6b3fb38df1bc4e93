// SPEC §5 at the unit level: which Authorization headers carry a key, and operator keys from the environment.
import { describe, expect, it } from "vitest";
import { Authenticator, OperatorKeys, parseOperatorKeys } from "../../../../gateway/keys/auth.ts";
import { bearerKey } from "../../../../gateway/http/bearer.ts";
import type { DailyUsage, KeyActivity, KeyOwner, KeyStore } from "../../../../gateway/keys/key-store.ts";
import { secretHash } from "../../../../gateway/keys/secret.ts";
import { UserKeys } from "../../../../gateway/keys/user-keys.ts";
import { ApiError } from "../../../../src/errors.ts";

describe("§5 Authentication", () => {
  it("SVC_OPERATOR_KEYS is a comma-separated list; blanks are ignored", async () => {
    expect(parseOperatorKeys(" a, b ,,c ")).toEqual(["a", "b", "c"]);
    expect(parseOperatorKeys(undefined)).toEqual([]);
  });

  it("takes the key from Authorization: Bearer <key>, scheme case-insensitive", async () => {
    expect(bearerKey("Bearer sk-svc_x")).toBe("sk-svc_x");
    expect(bearerKey("bearer sk-svc_x")).toBe("sk-svc_x");
    for (const header of [undefined, "", "Bearer", "Bearer ", "Basic abc", "Bearer a b", "sk-svc_x"]) {
      expect(bearerKey(header)).toBeUndefined();
    }
  });

  it("knows exactly the operator keys", async () => {
    const keys = new OperatorKeys(["sk-svc_one", "sk-svc_two"]);
    expect(keys.has("sk-svc_two")).toBe(true);
    expect(keys.has("sk-svc_tw")).toBe(false);
    expect(keys.has("sk-svc_two ")).toBe(false);
    expect(new OperatorKeys([]).has("")).toBe(false);
  });

  it("a missing or invalid key is 401 invalid_api_key, invalid_request_error, param null, fix_key", async () => {
    const auth = new Authenticator(new OperatorKeys(["sk-svc_one"]));
    for (const header of [undefined, "Basic x", "Bearer sk-svc_nope"]) {
      let error: unknown;
      try {
        await auth.authenticate(header);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).toEnvelope()).toEqual({
        error: { message: expect.any(String), type: "invalid_request_error", code: "invalid_api_key", param: null, svc_action: "fix_key" },
      });
      expect((error as ApiError).status).toBe(401);
      expect((error as ApiError).message).not.toContain("sk-svc_nope");
    }
    expect(await auth.authenticate("Bearer sk-svc_one")).toEqual({ kind: "operator", keyId: expect.stringMatching(/^op_[0-9a-f]{16}$/) });
  });

  it("each operator key is its own key for rate limits, named by its digest, never by the key", async () => {
    const auth = new Authenticator(new OperatorKeys(["sk-svc_one", "sk-svc_two"]));
    const one = await auth.authenticate("Bearer sk-svc_one");
    expect(await auth.authenticate("bearer sk-svc_one ")).toEqual(one);
    expect(await auth.authenticate("Bearer sk-svc_two")).not.toEqual(one);
    expect(JSON.stringify(one)).not.toContain("sk-svc_one");
  });
});

/** The store's key lookups and writes, counted; everything else is out of this module's reach. */
class FakeStore {
  live = new Map<string, KeyOwner>();
  lookups = 0;
  batches: Map<string, KeyActivity>[] = [];
  days: DailyUsage[][] = [];
  async keyLimits(): Promise<undefined> {
    return undefined;
  }
  async userLimits(): Promise<undefined> {
    return undefined;
  }
  async liveKey(hash: string): Promise<KeyOwner | undefined> {
    this.lookups++;
    return this.live.get(hash);
  }
  async revokeKey(userId: number, keyId: string): Promise<string | undefined> {
    for (const [hash, owner] of this.live) {
      if (owner.keyId === keyId && owner.userId === userId) {
        this.live.delete(hash);
        return hash;
      }
    }
    return undefined;
  }
  async recordActivity(batch: Map<string, KeyActivity>): Promise<void> {
    this.batches.push(new Map(batch));
  }
  async recordDailyUsage(batch: readonly DailyUsage[]): Promise<void> {
    this.days.push([...batch]);
  }
  close(): void {}
}

describe("§5 Authentication: user keys from the store", () => {
  const secret = `sk-svc_${"a".repeat(43)}`;
  const setup = () => {
    const store = new FakeStore();
    store.live.set(secretHash(secret), { keyId: "key_1", userId: 7 });
    const users = new UserKeys(store as unknown as KeyStore, (err) => { throw err; }, 3_600_000);
    return { store, users, auth: new Authenticator(new OperatorKeys(["operator-key"]), users) };
  };

  it("a user key authenticates as its owner; after the first lookup the hot path does not touch the store", async () => {
    const { store, users, auth } = setup();
    for (let i = 0; i < 5; i++) expect(await auth.authenticate(`Bearer ${secret}`)).toEqual({ kind: "user", keyId: "key_1", userId: 7 });
    expect(store.lookups).toBe(1);
    // keys without the product prefix are never looked up
    await expect(auth.authenticate("Bearer something-else")).rejects.toThrow(ApiError);
    expect(store.lookups).toBe(1);
    await users.close();
  });

  it("a revocation heard while the key's first lookup is in flight wins: the key is refused, not cached", async () => {
    const { store, users, auth } = setup();
    const lookup = store.liveKey.bind(store);
    let heard: () => void = () => undefined;
    store.liveKey = async (hash: string) => {
      const owner = await lookup(hash);
      await new Promise<void>((resolve) => (heard = resolve));
      return owner;
    };
    const first = auth.authenticate(`Bearer ${secret}`);
    await expect.poll(() => store.lookups).toBe(1);
    users.forget(secretHash(secret)); // another replica revoked it; this one's lookup read it as live
    heard();
    await expect(first).rejects.toThrow(expect.objectContaining({ code: "invalid_api_key" }));
    await users.close();
  });

  it("revoking a key takes effect on the very next request", async () => {
    const { users, auth } = setup();
    await auth.authenticate(`Bearer ${secret}`);
    expect(await users.revoke(8, "key_1")).toBe(false); // not the owner
    await auth.authenticate(`Bearer ${secret}`);
    expect(await users.revoke(7, "key_1")).toBe(true);
    await expect(auth.authenticate(`Bearer ${secret}`)).rejects.toThrow(expect.objectContaining({ code: "invalid_api_key", status: 401 }));
    await users.close();
  });

  it("last use and usage are written in batches, not once per request", async () => {
    const { store, users, auth } = setup();
    const principal = await auth.authenticate(`Bearer ${secret}`);
    if (principal.kind !== "user") throw new Error("expected a user key");
    await auth.authenticate(`Bearer ${secret}`);
    const noon = Date.UTC(2025, 0, 31, 12);
    users.noteUsage(principal, { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 }, "prov_a", noon);
    users.noteUsage(principal, { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 }, "prov_a", noon);
    // an operator key has no row of its own: it counts only per day and provider
    users.noteUsage(await auth.authenticate("Bearer operator-key"), { prompt_tokens: 4, completion_tokens: 4, total_tokens: 8 }, "prov_b", noon);
    expect(store.batches).toEqual([]);
    expect(store.days).toEqual([]);
    await users.flush();
    expect(store.batches).toEqual([
      new Map([["key_1", { lastUsedAt: expect.any(Number), requests: 2, promptTokens: 7, completionTokens: 4 }]]),
    ]);
    expect(store.days).toEqual([[
      { day: "2025-01-31", keyId: "key_1", providerId: "prov_a", requests: 2, promptTokens: 7, completionTokens: 4 },
      { day: "2025-01-31", keyId: expect.stringMatching(/^op_/), providerId: "prov_b", requests: 1, promptTokens: 4, completionTokens: 4 },
    ]]);
    await users.flush(); // nothing new: nothing written
    expect(store.batches).toHaveLength(1);
    expect(store.days).toHaveLength(1);
    await users.close();
  });
});
