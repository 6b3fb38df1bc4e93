// Release manifests (DESIGN §4, transparent rung): the code measurements of released builds, signed by a
// release key; a coordinator trusts the keys listed in its `--release-keys` file.
import { readFileSync } from "node:fs";
import { z } from "zod";
import { Hex32, Hex64 } from "../receipt/hex.ts";
import { SIGNATURE_DOMAINS, Signer, verifySignature } from "../crypto/signing.ts";

export const ReleaseManifestSchema = z.strictObject({
  version: z.literal(1),
  created: z.string(),
  measurements: z.array(Hex32).min(1).max(1000),
  release_key: Hex32,
  signature: Hex64,
});
export type ReleaseManifest = z.infer<typeof ReleaseManifestSchema>;

export function signManifest(signer: Signer, measurements: readonly string[], now = new Date()): ReleaseManifest {
  const unsigned = { version: 1 as const, created: now.toISOString(), measurements: [...measurements], release_key: signer.publicKey };
  return { ...unsigned, signature: signer.sign(SIGNATURE_DOMAINS.release, unsigned) };
}

/** Why `measurement` is not vouched for by `manifest` under these release keys, or undefined when it is. */
export function manifestRefusal(manifest: ReleaseManifest, trustedKeys: ReadonlySet<string>, measurement: string): string | undefined {
  if (!trustedKeys.has(manifest.release_key)) return `the release manifest is signed by ${manifest.release_key}, not a trusted release key`;
  const { signature, ...unsigned } = manifest;
  if (!verifySignature(manifest.release_key, SIGNATURE_DOMAINS.release, unsigned, signature)) {
    return "the release manifest's signature does not verify (tampered manifest)";
  }
  if (!manifest.measurements.includes(measurement)) return `code measurement ${measurement} is not listed in the release manifest`;
  return undefined;
}

/** `--release-keys FILE`: one raw Ed25519 public key per line, lowercase hex; `#` starts a comment. */
export function loadReleaseKeys(path: string): Set<string> {
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

export function loadManifest(path: string): ReleaseManifest {
  const parsed = ReleaseManifestSchema.safeParse(JSON.parse(readFileSync(path, "utf8")));
  if (!parsed.success) throw new Error(`${path} is not a release manifest: ${parsed.error.issues[0]?.message ?? "invalid"}`);
  return parsed.data;
}
