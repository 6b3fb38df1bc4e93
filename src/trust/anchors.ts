// Trust anchors from text: attestation roots as PEM and release keys as hex, parsed without a file system, so that a
// caller's client takes them as strings (never @peculiar types) and the operator's files (anchor-files.ts) read
// into the same anchors by the same code.
import type { X509Certificate } from "@peculiar/x509";
import { Hex32 } from "../receipt/hex.ts";
import type { TrustAnchors } from "./attestation.ts";
import { parseCertificate, splitPem } from "./hardware-chain.ts";

/** Every certificate in each PEM text (one may hold several, or none); throws naming the text whose certificate does not parse. */
export function rootsFromPem(pems: readonly string[], sourceOf: (index: number) => string): X509Certificate[] {
  return pems.flatMap((pem, i) =>
    splitPem(pem).map((block) => {
      try {
        return parseCertificate(block);
      } catch (err) {
        throw new Error(`${sourceOf(i)} holds a certificate that does not parse (${(err as Error).message})`);
      }
    }),
  );
}

/**
 * Raw Ed25519 public keys, one per line in lowercase hex, `#` starting a comment: what `--release-keys` and
 * `--coordinator-keys` files hold, and what a caller passes one key at a time. Throws naming the line.
 */
export function keyList(text: string, source: string): Set<string> {
  const keys = new Set<string>();
  text.split("\n").forEach((raw, index) => {
    const line = raw.replace(/#.*/, "").trim();
    if (line === "") return;
    if (!Hex32.safeParse(line).success) throw new Error(`${source}:${index + 1}: expected a 64-hex-character Ed25519 public key`);
    keys.add(line);
  });
  return keys;
}

/** The anchors a caller hands in as strings: PEM roots (each at least one certificate) and hex release keys. */
export function anchorsFrom({ roots = [], releaseKeys = [] }: { roots?: readonly string[]; releaseKeys?: Iterable<string> }): TrustAnchors {
  const empty = roots.findIndex((pem) => splitPem(pem).length === 0);
  if (empty !== -1) throw new Error(`trustedRoots[${empty}] holds no PEM certificate`);
  return {
    roots: rootsFromPem(roots, (i) => `trustedRoots[${i}]`),
    releaseKeys: new Set([...releaseKeys].flatMap((key, i) => [...keyList(key, `releaseKeys[${i}]`)])),
  };
}
