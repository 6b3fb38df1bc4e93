// RFC 8785 (JCS) canonical JSON: the one byte form of a value that signatures and hashes cover.
import canonicalizeJson from "canonicalize";

export function canonicalJson(value: unknown): string {
  const text = canonicalizeJson(value);
  // canonicalize returns undefined for values JSON cannot hold; a signed thing must never be one
  if (text === undefined) throw new TypeError("value has no canonical JSON form");
  return text;
}
