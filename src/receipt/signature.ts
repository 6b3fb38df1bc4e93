// Checking Ed25519 signatures over domain-separated canonical JSON, `"<domain>\0" || JCS(payload)`, in plain
// JavaScript (@noble/curves), so receipts verify the same way in node and in a browser. Signing stays in
// src/crypto/signing.ts on node's native Ed25519; the domains keep one kind of signed thing from passing as another.
import { ed25519 } from "@noble/curves/ed25519.js";
import { hexToBytes, utf8ToBytes } from "@noble/hashes/utils.js";
import { canonicalJson } from "./canonical-json.ts";
import { Hex32, Hex64 } from "./hex.ts";

export const SIGNATURE_DOMAINS = {
  attestation: "svc-attest/v1",
  release: "svc-release/v1",
  receipt: "svc-receipt/v1",
  fabric: "svc-fabric/v1",
  /** An auditor's evidence of an audit of a provider's weights (src/audit/evidence.ts). */
  audit: "svc-audit/v1",
} as const;
export type SignatureDomain = (typeof SIGNATURE_DOMAINS)[keyof typeof SIGNATURE_DOMAINS];

/** The bytes a signature covers. */
export function signedMessage(domain: SignatureDomain, payload: unknown): Uint8Array {
  return utf8ToBytes(`${domain}\0${canonicalJson(payload)}`);
}

/** False for any signature, key or payload that does not check out; never throws on malformed hex. */
export function verifySignature(publicKeyHex: string, domain: SignatureDomain, payload: unknown, signatureHex: string): boolean {
  if (!Hex32.safeParse(publicKeyHex).success || !Hex64.safeParse(signatureHex).success) return false;
  try {
    // RFC 8032's strict rules (canonical encodings), as node's OpenSSL checks them, not ZIP-215's looser ones
    return ed25519.verify(hexToBytes(signatureHex), signedMessage(domain, payload), hexToBytes(publicKeyHex), { zip215: false });
  } catch {
    return false;
  }
}
