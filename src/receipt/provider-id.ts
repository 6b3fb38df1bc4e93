// A provider id is the lowercase hex SHA-256 of its raw Ed25519 public key (DESIGN §4). Portable: part of the
// receipt verifier that also runs in browsers.
import { hexToBytes } from "@noble/hashes/utils.js";
import { sha256Hex } from "./sha256.ts";

/** Throws on a key that is not hex; every caller has checked it is 64 hex characters first. */
export function providerIdOf(signingKey: string): string {
  return sha256Hex(hexToBytes(signingKey));
}
