// The trust anchors as operators keep them in files, read once at start: attestation roots (`--attestation-roots DIR`),
// release keys (`--release-keys FILE`), a release manifest (`--release-manifest FILE`), and the coordinators' directory
// keys (`--coordinator-keys FILE`). The checks that use them (attestation.ts, hardware-chain.ts, release-manifest.ts)
// read no files, so they run anywhere; this is their node side.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { X509Certificate } from "@peculiar/x509";
import { Hex32 } from "../receipt/hex.ts";
import { parseCertificate, splitPem } from "./hardware-chain.ts";
import { ReleaseManifestSchema, type ReleaseManifest } from "./release-manifest.ts";

/** Every certificate in the `.pem`/`.crt` files of `--attestation-roots DIR`. */
export function loadRoots(dir: string): X509Certificate[] {
  const roots = readdirSync(dir)
    .filter((name) => /\.(pem|crt)$/.test(name))
    .flatMap((name) => splitPem(readFileSync(join(dir, name), "utf8")).map(parseCertificate));
  if (roots.length === 0) throw new Error(`${dir} holds no .pem or .crt certificate`);
  return roots;
}

/**
 * A file of raw Ed25519 public keys, one per line in lowercase hex, `#` starting a comment: what `--release-keys`
 * and `--coordinator-keys` take.
 */
export function loadKeyList(path: string): Set<string> {
  const keys = new Set<string>();
  readFileSync(path, "utf8")
    .split("\n")
    .forEach((raw, index) => {
      const line = raw.replace(/#.*/, "").trim();
      if (line === "") return;
      if (!Hex32.safeParse(line).success) throw new Error(`${path}:${index + 1}: expected a 64-hex-character Ed25519 public key`);
      keys.add(line);
    });
  return keys;
}

/** `--release-keys FILE`: the release keys whose manifests earn the transparent rung. */
export const loadReleaseKeys = loadKeyList;

export function loadManifest(path: string): ReleaseManifest {
  const parsed = ReleaseManifestSchema.safeParse(JSON.parse(readFileSync(path, "utf8")));
  if (!parsed.success) throw new Error(`${path} is not a release manifest: ${parsed.error.issues[0]?.message ?? "invalid"}`);
  return parsed.data;
}
