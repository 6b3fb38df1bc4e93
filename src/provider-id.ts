// A provider id is the lowercase hex SHA-256 of its raw Ed25519 public key (DESIGN §4).
import { createHash } from "node:crypto";

export function providerIdOf(signingKey: string): string {
  return createHash("sha256").update(Buffer.from(signingKey, "hex")).digest("hex");
}
