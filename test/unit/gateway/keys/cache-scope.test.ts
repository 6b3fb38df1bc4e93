// DESIGN §9's cache scope at the gateway: an HMAC of the key id (and prompt_cache_key) under the gateway secret,
// sealed as cache_scope; prompt_cache_key and cache_prompt parsed at the boundary.
import { describe, expect, it } from "vitest";
import { affinityKey, cacheOwners, cacheScopes, scopeSecret } from "../../../../gateway/keys/cache-scope.ts";
import { MAX_PROMPT_CACHE_KEY_LENGTH } from "../../../../src/openai/cache-fields.ts";
import { parseSessionPlaintext } from "../../../../src/session/sealed-request.ts";
import { catchApiError } from "../../../fixtures/api-error.ts";
import { CATALOG, NONCE, parse } from "../../../fixtures/chat-request.ts";
import { parseLegacyRequest } from "../../../../src/openai/legacy-request.ts";

const scopeOf = cacheScopes("the-gateway-secret");
const base = { model: "qwen3-4b", messages: [{ role: "user", content: "hi" }] };
const ownerOf = cacheOwners("the-gateway-secret");
/** The scope admission computes from the body's prompt_cache_key (gateway/openai/pipeline.ts), and its owner. */
const cacheFor = (keyId: string, body: Record<string, unknown>) => ({
  cacheScope: scopeOf(keyId, typeof body.prompt_cache_key === "string" ? body.prompt_cache_key : undefined),
  cacheOwner: ownerOf(keyId),
});
const parseFor = (body: Record<string, unknown>, keyId: string) => parse(body, cacheFor(keyId, body));

describe("DESIGN §9 cache scope: one secret for every gateway on a shared store", () => {
  it("a store every gateway shares gives its secret, made by the first to ask; any other store leaves the gateway's own", async () => {
    const kept = new Map<string, string>();
    const shared = { sharedSecret: async (name: string, made: string) => (kept.has(name) ? kept.get(name)! : (kept.set(name, made), made)) };
    const first = await scopeSecret(shared, "gateway-one");
    expect(first).not.toBe("gateway-one");
    expect(first).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await scopeSecret(shared, "gateway-two")).toBe(first);
    expect(await scopeSecret({}, "gateway-one")).toBe("gateway-one");
  });

  it("routing's affinity key is a hash of alias and scope: stable, per alias, and not the scope", () => {
    const scope = scopeOf("key_1234", undefined);
    const key = affinityKey("qwen3-4b", scope);
    expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(affinityKey("qwen3-4b", scope)).toBe(key);
    expect(affinityKey("qwen3-8b", scope)).not.toBe(key);
    expect(key).not.toContain(scope.slice(0, 16));
  });
});

describe("DESIGN §9 cache scope: an HMAC, never the key", () => {
  it("is 64 hex characters, the same for the same key id and prompt_cache_key, and names neither", () => {
    const scope = scopeOf("key_1234", undefined);
    expect(scope).toMatch(/^[0-9a-f]{64}$/);
    expect(scopeOf("key_1234", undefined)).toBe(scope);
    expect(scope).not.toContain("key_1234");
  });

  it("another key, another prompt_cache_key or another gateway secret gives another scope", () => {
    const scopes = new Set([
      scopeOf("key_1234", undefined),
      scopeOf("key_5678", undefined),
      scopeOf("key_1234", "conversation-1"),
      scopeOf("key_1234", "conversation-2"),
      scopeOf("key_5678", "conversation-1"),
      cacheScopes("another-secret")("key_1234", undefined),
    ]);
    expect(scopes.size).toBe(6);
    // the pair is encoded unambiguously: a key id cannot borrow part of a prompt_cache_key
    expect(scopeOf("a", "bc")).not.toBe(scopeOf("ab", "c"));
  });
});

describe("§2.1 prompt_cache_key and cache_prompt", () => {
  it("the sealed request carries the caller's scope, which prompt_cache_key refines; the parsed request exports it", () => {
    const plain = parseFor(base, "key_1");
    expect(plain.body.cache_scope).toBe(scopeOf("key_1", undefined));
    expect(plain.cacheScope).toBe(plain.body.cache_scope);
    expect(parseFor({ ...base, prompt_cache_key: "chat-7" }, "key_1").body.cache_scope).toBe(scopeOf("key_1", "chat-7"));
    expect(parseFor({ ...base, prompt_cache_key: null }, "key_1").body.cache_scope).toBe(scopeOf("key_1", undefined));
    // and an agent reads it back
    expect(parseSessionPlaintext(JSON.parse(JSON.stringify(plain.body))).cache_scope).toBe(plain.body.cache_scope);
  });

  it("beside its scope a request seals its owner: one per key whatever its prompt_cache_key, naming neither (issue 41)", () => {
    const owner = ownerOf("key_1");
    expect(owner).toMatch(/^[0-9a-f]{64}$/);
    expect(owner).not.toBe(scopeOf("key_1", undefined));
    expect(ownerOf("key_2")).not.toBe(owner);
    expect(cacheOwners("another-secret")("key_1")).not.toBe(owner);
    for (const key of [undefined, "chat-7", "chat-8"]) expect(parseFor({ ...base, prompt_cache_key: key }, "key_1").body.cache_owner).toBe(owner);
    expect(parseSessionPlaintext(JSON.parse(JSON.stringify(parseFor(base, "key_1").body))).cache_owner).toBe(owner);
  });

  it("cache_prompt false seals no scope and cache_prompt: false; true is the default and seals nothing more", () => {
    const off = parseFor({ ...base, cache_prompt: false }, "key_1");
    expect(off.body).toMatchObject({ cache_prompt: false });
    expect(off.body).not.toHaveProperty("cache_scope");
    expect(off.body).not.toHaveProperty("cache_owner");
    expect(off.cacheScope).toBeUndefined();
    expect(parseFor({ ...base, cache_prompt: true }, "key_1").body).toEqual(parseFor(base, "key_1").body);
  });

  it("a legacy completion seals the caller's scope as chat does, prompt_cache_key refining it, none under cache_prompt false", () => {
    const legacy = (body: Record<string, unknown>, keyId: string) =>
      parseLegacyRequest(body, { catalog: CATALOG, nonce: NONCE, ...cacheFor(keyId, body) });
    const raw = { model: "qwen3-4b", prompt: "def main():" };
    expect(legacy(raw, "key_1").body.cache_scope).toBe(scopeOf("key_1", undefined));
    expect(legacy(raw, "key_1").cacheScope).toBe(scopeOf("key_1", undefined));
    expect(legacy({ ...raw, prompt_cache_key: "file-9" }, "key_1").body.cache_scope).toBe(scopeOf("key_1", "file-9"));
    const off = legacy({ ...raw, cache_prompt: false }, "key_1");
    expect(off.body).toMatchObject({ cache_prompt: false });
    expect(off.body).not.toHaveProperty("cache_scope");
    expect(off.cacheScope).toBeUndefined();
    const long = catchApiError(() => legacy({ ...raw, prompt_cache_key: "k".repeat(MAX_PROMPT_CACHE_KEY_LENGTH + 1) }, "key_1"));
    expect([long.status, long.code, long.param]).toEqual([400, "invalid_value", "prompt_cache_key"]);
    expect(catchApiError(() => legacy({ ...raw, cache_prompt: "no" }, "key_1")).param).toBe("cache_prompt");
  });

  it("a prompt_cache_key past its bound, or of the wrong type, and a cache_prompt that is not a boolean are 400s naming the field", () => {
    const long = catchApiError(() => parseFor({ ...base, prompt_cache_key: "k".repeat(MAX_PROMPT_CACHE_KEY_LENGTH + 1) }, "key_1"));
    expect([long.status, long.code, long.param]).toEqual([400, "invalid_value", "prompt_cache_key"]);
    expect(catchApiError(() => parse({ ...base, prompt_cache_key: 7 })).param).toBe("prompt_cache_key");
    const flag = catchApiError(() => parse({ ...base, cache_prompt: "no" }));
    expect([flag.status, flag.code, flag.param]).toEqual([400, "invalid_type", "cache_prompt"]);
  });

  it("an agent refuses a cache_scope that is not 64 hex characters, and cache_prompt true (only false is sealed)", () => {
    const body = parse(base).body;
    expect(() => parseSessionPlaintext({ ...body, cache_scope: "KEY" })).toThrow();
    expect(() => parseSessionPlaintext({ ...body, cache_prompt: true })).toThrow();
  });
});
