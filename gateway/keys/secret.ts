// Secrets the gateway hands out: user API keys (SPEC §5, `sk-svc_`) and provider enrollment tokens
// (`svc-prov_`), each a prefix and 32 random bytes in base64url. Only a secret's SHA-256 is kept; the short
// display prefix lets a person tell them apart without the secret.
import { randomBytes } from "node:crypto";
import { nodeSha256Hex } from "../../src/crypto/sha256-node.ts";

export const SECRET_PREFIX = "sk-svc_";
export const PROVIDER_TOKEN_PREFIX = "svc-prov_";
const SECRET_BYTES = 32;
/** How many characters of the random part the display prefix shows. */
const SHOWN_CHARS = 4;

export function newSecret(prefix = SECRET_PREFIX): string {
  return prefix + randomBytes(SECRET_BYTES).toString("base64url");
}

/** The stored form of a secret; lookups go through this, never through the secret itself. */
export function secretHash(secret: string): string {
  return nodeSha256Hex(secret);
}

/** `sk-svc_ab12…`: enough to recognise a key, far too little to use it. */
export function displayPrefix(secret: string): string {
  return `${secret.slice(0, secret.indexOf("_") + 1 + SHOWN_CHARS)}…`;
}

/** A new key's or token's public id (it appears in URLs and listings; it is not a secret). */
export function newKeyId(kind: "key" | "ptk" = "key"): string {
  return `${kind}_${randomBytes(12).toString("hex")}`;
}
