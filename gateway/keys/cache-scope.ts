// Prompt-cache scopes (DESIGN §9): the name a provider keeps one caller's conversations under. An HMAC of the API
// key's id (and OpenAI's `prompt_cache_key`) under a key derived from the gateway's scope secret: the same caller
// gets the same scope at every gateway sharing that secret (all of them on one PostgreSQL store), and a provider
// learns neither the key nor who the caller is. Also the key routing remembers a scope's
// provider by; the request fields that refine the scope are src/openai/cache-fields.ts.
import { createHash, createHmac, hkdfSync, randomBytes } from "node:crypto";
import { Kept } from "../../src/receipt/kept.ts";
import type { KeyStore } from "./key-store.ts";

/**
 * How many of each are kept (a few hundred kilobytes at most): a request's scope, owner and affinity key are pure
 * functions of its key id and alias, and an HMAC or a hash each cost about as much as the rest of its admission.
 * A scope refined by a prompt_cache_key (up to 1,024 characters, the caller's to vary) is not kept.
 */
const KEPT = 4_096;

/** HKDF info: this key derived from the gateway secret is for cache scopes and nothing else. */
const SCOPE_KEY_INFO = "svc-cache-scope/v1";
/** HKDF info: this one for cache owners (a key's share of a provider's cache) and nothing else. */
const OWNER_KEY_INFO = "svc-cache-owner/v1";

/** The name of the scope secret on a store every gateway shares. */
const SCOPE_SECRET = "cache-scope";

/**
 * The secret scopes are derived from: on a store every gateway shares (PostgreSQL), the one kept there, made by the
 * first gateway to ask, so a caller's turns through any replica are one scope; else this gateway's own secret.
 */
export async function scopeSecret(store: Pick<KeyStore, "sharedSecret">, gatewaySecret: string): Promise<string> {
  return store.sharedSecret ? await store.sharedSecret(SCOPE_SECRET, randomBytes(32).toString("base64url")) : gatewaySecret;
}

const AFFINITY_KEYS = new Kept(KEPT, (text) => createHash("sha256").update(text).digest("base64url"));

/**
 * The key routing remembers a scope's provider by, per alias (DESIGN §9): a hash, so what the directory holds, and
 * on NATS tells the other gateways, is not the scope a provider is sent.
 */
export function affinityKey(alias: string, scope: string): string {
  return AFFINITY_KEYS.get(`${alias}\n${scope}`);
}

/** A caller's scope from its key id and optional prompt_cache_key; 64 hex characters. */
export type ScopeOf = (keyId: string, promptCacheKey: string | undefined) => string;

export function cacheScopes(gatewaySecret: string): ScopeOf {
  const key = Buffer.from(hkdfSync("sha256", gatewaySecret, "", SCOPE_KEY_INFO, 32));
  // JSON keeps the two apart: no key id and prompt_cache_key pair can spell another's
  const scope = (keyId: string, promptCacheKey: string | undefined) => createHmac("sha256", key).update(JSON.stringify([keyId, promptCacheKey ?? null])).digest("hex");
  const keyScopes = new Kept(KEPT, (keyId) => scope(keyId, undefined));
  return (keyId, promptCacheKey) => (promptCacheKey === undefined ? keyScopes.get(keyId) : scope(keyId, promptCacheKey));
}

/** Who a scope belongs to, as a provider's cache shares itself out (issue 41): one per key, whatever its
 * prompt_cache_keys; 64 hex characters that name neither the key nor its scopes. */
export type OwnerOf = (keyId: string) => string;

export function cacheOwners(gatewaySecret: string): OwnerOf {
  const key = Buffer.from(hkdfSync("sha256", gatewaySecret, "", OWNER_KEY_INFO, 32));
  const owners = new Kept(KEPT, (keyId) => createHmac("sha256", key).update(keyId).digest("hex"));
  return (keyId) => owners.get(keyId);
}
