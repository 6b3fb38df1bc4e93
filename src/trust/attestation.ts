// Attestation evidence and the rung it earns (DESIGN §4). The agent signs the coordinator's fresh nonce
// together with both public keys (process); it may add its code measurement with a signed release manifest
// (transparent) and an X.509 chain binding its keys (hardware). Each rung needs the ones below it.
import type { X509Certificate } from "@peculiar/x509";
import { z } from "zod";
import { keysDigest, MAX_CHAIN_CERTS, verifyChain } from "./hardware-chain.ts";
import { Hex32, Hex64 } from "../receipt/hex.ts";
import { manifestRefusal, ReleaseManifestSchema } from "./release-manifest.ts";
import { SIGNATURE_DOMAINS, verifySignature, type Signer } from "../crypto/signing.ts";
import type { TrustLevel } from "../receipt/rungs.ts";

export const EvidenceSchema = z.strictObject({
  nonce: Hex32,
  signing_key: Hex32,
  sealing_key: Hex32,
  name: z.string().max(64).optional(),
  measurement: Hex32.optional(),
  manifest: ReleaseManifestSchema.optional(),
  chain: z.array(z.string().max(16_384)).min(1).max(MAX_CHAIN_CERTS).optional(),
  signature: Hex64,
});
export type Evidence = z.infer<typeof EvidenceSchema>;
export type UnsignedEvidence = Omit<Evidence, "signature">;

export function signEvidence(signer: Signer, evidence: UnsignedEvidence): Evidence {
  return { ...evidence, signature: signer.sign(SIGNATURE_DOMAINS.attestation, evidence) };
}

export interface TrustAnchors {
  releaseKeys: ReadonlySet<string>;
  roots: readonly X509Certificate[];
}

export type Grant =
  | { ok: true; rung: TrustLevel; serial?: string; /** Why a higher rung was not granted. */ refusals: string[] }
  | { ok: false; reason: string };

/** The rung this evidence earns in answer to `nonce`, or why it earns none. */
export async function verifyEvidence(evidence: Evidence, nonce: string, anchors: TrustAnchors, now = new Date()): Promise<Grant> {
  if (evidence.nonce !== nonce) return { ok: false, reason: "the evidence does not answer the challenge just sent (replayed or stale nonce)" };
  const { signature, ...unsigned } = evidence;
  if (!verifySignature(evidence.signing_key, SIGNATURE_DOMAINS.attestation, unsigned, signature)) {
    return { ok: false, reason: "the signature over the challenge does not verify with the presented signing key" };
  }
  const refusals: string[] = [];
  const transparent = transparentRefusal(evidence, anchors);
  if (transparent !== undefined) {
    if (transparent !== "") refusals.push(`transparent refused: ${transparent}`);
    if (evidence.chain) refusals.push("hardware refused: it needs the transparent rung's evidence too");
    return { ok: true, rung: "process", refusals };
  }
  if (!evidence.chain) return { ok: true, rung: "transparent", refusals };
  const chain = await verifyChain(evidence.chain, anchors.roots, keysDigest(evidence.signing_key, evidence.sealing_key), now);
  if (!chain.ok) return { ok: true, rung: "transparent", refusals: [`hardware refused: ${chain.reason}`] };
  return { ok: true, rung: "hardware", serial: chain.serial, refusals };
}

/** Undefined when the transparent rung is earned; "" when it was not claimed; else the reason. */
export function transparentRefusal(evidence: Evidence, anchors: Pick<TrustAnchors, "releaseKeys">): string | undefined {
  if (!evidence.measurement && !evidence.manifest) return "";
  if (!evidence.measurement) return "the evidence carries a manifest but no code measurement";
  if (!evidence.manifest) return "the evidence carries a code measurement but no release manifest";
  return manifestRefusal(evidence.manifest, anchors.releaseKeys, evidence.measurement);
}
