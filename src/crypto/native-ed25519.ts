// Checking Ed25519 signatures on node:crypto's OpenSSL, built on whichever node:crypto the caller hands in: the gateway
// binds its own (src/crypto/signing.ts), the client package takes node's, Deno's or Bun's at run time, and a browser
// keeps src/receipt/signature.ts's JavaScript, so the browser bundle never imports node:crypto.
import type * as NodeCrypto from "node:crypto";
import { Kept } from "../receipt/kept.ts";
import { signedMessage, type verifySignature } from "../receipt/signature.ts";

/** The part of node:crypto the check uses. */
export type Ed25519Crypto = Pick<typeof NodeCrypto, "createPublicKey" | "verify">;

// the DER header that makes a raw 32-byte Ed25519 public key an SPKI (RFC 8410), which is how node imports raw keys
const SPKI_PREFIX = "302a300506032b6570032100";
const HEX32 = /^[0-9a-f]{64}$/;
const HEX64 = /^[0-9a-f]{128}$/;

/**
 * The same check as src/receipt/signature.ts's `verifySignature` (RFC 8032's strict rules, as there), about 15× faster:
 * for the gateway, which checks a receipt on every request, and a client in a runtime with node:crypto. Never throws.
 */
export function nativeSignatureCheck({ createPublicKey, verify }: Ed25519Crypto, Buffer: typeof globalThis.Buffer): typeof verifySignature {
  /** Providers' signing keys: one import each, not one per receipt. */
  const keys = new Kept(16_384, (hex) => createPublicKey({ key: Buffer.from(SPKI_PREFIX + hex, "hex"), format: "der", type: "spki" }));
  return (publicKeyHex, domain, payload, signatureHex) => {
    if (!HEX32.test(publicKeyHex) || !HEX64.test(signatureHex)) return false;
    try {
      return verify(null, signedMessage(domain, payload), keys.get(publicKeyHex), Buffer.from(signatureHex, "hex"));
    } catch {
      return false;
    }
  };
}
