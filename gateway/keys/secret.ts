// User API key secrets (SPEC §5): `sk-svc_` + 32 random bytes in base64url. Only a secret's SHA-256 is kept;
// the short display prefix lets a person tell their keys apart without the secret.
import { randomBytes } from "node:crypto";
import { sha256Hex } from "../../src/hash.ts";

export const SECRET_PREFIX = "sk-svc_";
const SECRET_BYTES = 32;
/** How many characters of the random part the display prefix shows. */
const SHOWN_CHARS = 4;

export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString("base64url");
}

/** The stored form of a secret; lookups go through this, never through the secret itself. */
export function secretHash(secret: string): string {
  return sha256Hex(secret);
}

/** `sk-svc_ab12…`: enough to recognise a key, far too little to use it. */
export function displayPrefix(secret: string): string {
  return `${secret.slice(0, SECRET_PREFIX.length + SHOWN_CHARS)}…`;
}

/** A new key's public id (it appears in form URLs; it is not a secret). */
export function newKeyId(): string {
  return `key_${randomBytes(12).toString("hex")}`;
}
