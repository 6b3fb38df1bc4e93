// The trust anchors as operators keep them in files, read once at start: attestation roots (`--attestation-roots DIR`),
// release keys (`--release-keys FILE`), a release manifest (`--release-manifest FILE`), and the coordinators' directory
// keys (`--coordinator-keys FILE`). The checks that use them (attestation.ts, hardware-chain.ts, release-manifest.ts)
// read no files, so they run anywhere; this is their node side.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { X509Certificate } from "@peculiar/x509";
import { keyList, rootsFromPem } from "./anchors.ts";
import { ReleaseManifestSchema, type ReleaseManifest } from "./release-manifest.ts";

/** Every certificate in the `.pem`/`.crt` files of `--attestation-roots DIR`. */
export function loadRoots(dir: string): X509Certificate[] {
  const names = readdirSync(dir).filter((name) => /\.(pem|crt)$/.test(name));
  const roots = rootsFromPem(names.map((name) => readFileSync(join(dir, name), "utf8")), (i) => join(dir, names[i]!));
  if (roots.length === 0) throw new Error(`${dir} holds no .pem or .crt certificate`);
  return roots;
}

/**
 * A file of raw Ed25519 public keys, one per line in lowercase hex, `#` starting a comment: what `--release-keys`
 * and `--coordinator-keys` take.
 */
export function loadKeyList(path: string): Set<string> {
  return keyList(readFileSync(path, "utf8"), path);
}

/** `--release-keys FILE`: the release keys whose manifests earn the transparent rung. */
export const loadReleaseKeys = loadKeyList;

export function loadManifest(path: string): ReleaseManifest {
  const parsed = ReleaseManifestSchema.safeParse(JSON.parse(readFileSync(path, "utf8")));
  if (!parsed.success) throw new Error(`${path} is not a release manifest: ${parsed.error.issues[0]?.message ?? "invalid"}`);
  return parsed.data;
}
