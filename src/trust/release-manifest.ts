// Release manifests (DESIGN §4, transparent rung): the code measurements of released builds, signed by a
// release key; a coordinator (and each gateway) trusts the keys listed in its `--release-keys` file (anchor-files.ts).
import * as z from "zod";
import { Hex32, Hex64 } from "../receipt/hex.ts";
import { SIGNATURE_DOMAINS, verifySignature, type SignatureDomain } from "../receipt/signature.ts";

export const ReleaseManifestSchema = z.strictObject({
  version: z.literal(1),
  created: z.string(),
  measurements: z.array(Hex32).min(1).max(1000),
  release_key: Hex32,
  signature: Hex64,
});
export type ReleaseManifest = z.infer<typeof ReleaseManifestSchema>;

/** `signer`: a release key (src/crypto/signing.ts's Signer). */
export function signManifest(signer: { publicKey: string; sign(domain: SignatureDomain, payload: unknown): string }, measurements: readonly string[], now = new Date()): ReleaseManifest {
  const unsigned = { version: 1 as const, created: now.toISOString(), measurements: [...measurements], release_key: signer.publicKey };
  return { ...unsigned, signature: signer.sign(SIGNATURE_DOMAINS.release, unsigned) };
}

/** Why `measurement` is not vouched for by `manifest` under these release keys, or undefined when it is. */
export function manifestRefusal(manifest: ReleaseManifest, trustedKeys: ReadonlySet<string>, measurement: string, checkSignature = verifySignature): string | undefined {
  if (!trustedKeys.has(manifest.release_key)) return `the release manifest is signed by ${manifest.release_key}, not a trusted release key`;
  const { signature, ...unsigned } = manifest;
  if (!checkSignature(manifest.release_key, SIGNATURE_DOMAINS.release, unsigned, signature)) {
    return "the release manifest's signature does not verify (tampered manifest)";
  }
  if (!manifest.measurements.includes(measurement)) return `code measurement ${measurement} is not listed in the release manifest`;
  return undefined;
}
