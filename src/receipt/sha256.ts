// SHA-256 as lowercase hex in plain JavaScript (@noble/hashes), so the receipt verifier runs unchanged in a
// browser. Node-only code that hashes a lot (model files, every request on the gateway) keeps src/crypto/sha256-node.ts,
// which is node's native SHA-256 and about ten times faster on large inputs; both give the same digest.
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";

/** Lowercase hex SHA-256 of bytes, or of a string's UTF-8 bytes (a lone surrogate becomes U+FFFD, as in node). */
export function sha256Hex(data: Uint8Array | string): string {
  return bytesToHex(sha256(typeof data === "string" ? utf8ToBytes(data) : data));
}
