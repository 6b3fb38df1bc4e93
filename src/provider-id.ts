// A provider id is the lowercase hex SHA-256 of its raw Ed25519 public key (DESIGN §4).
import { sha256Hex } from "./hash.ts";

export function providerIdOf(signingKey: string): string {
  return sha256Hex(Buffer.from(signingKey, "hex"));
}
