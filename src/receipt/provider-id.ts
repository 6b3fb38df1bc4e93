// A provider id is the lowercase hex SHA-256 of its raw Ed25519 public key (DESIGN §4). Portable: part of the
// receipt verifier that also runs in browsers.
import { hexToBytes } from "@noble/hashes/utils.js";
import { Kept } from "./kept.ts";
import { sha256Hex } from "./sha256.ts";

/** Each signing key's id, hashed once: every receipt a gateway checks hashes its provider's key again otherwise. */
const IDS = new Kept(16_384, (signingKey) => sha256Hex(hexToBytes(signingKey)));

/** Throws on a key that is not hex; every caller has checked it is 64 hex characters first. */
export function providerIdOf(signingKey: string): string {
  return IDS.get(signingKey);
}
