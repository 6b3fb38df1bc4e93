// Attestation evidence and the rung it earns (DESIGN §4, §11). The agent signs the coordinator's fresh nonce
// together with both public keys (process); it may add its code measurement with a signed release manifest
// (transparent) and an X.509 chain binding its keys (hardware). Each rung needs the ones below it.
// `checkEvidence` is the one check of what evidence proves: the coordinator runs it on each answer to its challenge,
// every gateway on each provider it learns of, and `svc-agent verify --attestation` on a saved record. It reads no
// file and imports no node: module (WebCrypto, @peculiar/x509, @noble), so a browser can run it too.
import type { X509Certificate } from "@peculiar/x509";
import * as z from "zod";
import { canonicalJson } from "../receipt/canonical-json.ts";
import { keysDigest, MAX_CHAIN_CERTS, verifyChain } from "./hardware-chain.ts";
import { Hex32, Hex64 } from "../receipt/hex.ts";
import { providerIdOf } from "../receipt/provider-id.ts";
import { manifestRefusal, ReleaseManifestSchema } from "./release-manifest.ts";
import { sha256Hex } from "../receipt/sha256.ts";
import { SIGNATURE_DOMAINS, verifySignature, type SignatureDomain } from "../receipt/signature.ts";
import type { TrustLevel } from "../receipt/rungs.ts";

/**
 * Bounded as it is parsed, so that checking a hostile blob costs little: at most MAX_CHAIN_CERTS certificates of
 * 16 KiB (one signature check per link, one per root), a manifest of at most 1,000 measurements.
 */
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

/** `signer`: the agent's (src/crypto/signing.ts's Signer). */
export function signEvidence(signer: { sign(domain: SignatureDomain, payload: unknown): string }, evidence: UnsignedEvidence): Evidence {
  return { ...evidence, signature: signer.sign(SIGNATURE_DOMAINS.attestation, evidence) };
}

/** What names one piece of evidence: the SHA-256 of its RFC 8785 JSON, lowercase hex. */
export const evidenceDigest = (evidence: Evidence): string => sha256Hex(canonicalJson(evidence));

/** Whoever checks evidence brings their own: the release keys and attestation roots they trust. */
export interface TrustAnchors {
  releaseKeys: ReadonlySet<string>;
  roots: readonly X509Certificate[];
}

/** One rung's part of the evidence: absent, proven, or refused with the reason. */
export type RungCheck = { presented: false } | { presented: true; ok: true } | { presented: true; ok: false; reason: string };

/** Each check run on the evidence, whatever the others found (the offline verifier prints every one). */
export interface EvidenceChecks {
  signature: { ok: true } | { ok: false; reason: string };
  transparent: RungCheck;
  /** At hardware, with the serial the leaf names. */
  hardware: RungCheck & { serial?: string };
}

/** What evidence proves under the checker's anchors: a rung, the serial at hardware and the keys it binds; or nothing, and why. */
export type EvidenceVerdict = { checks: EvidenceChecks } & (
  | {
      ok: true;
      rung: TrustLevel;
      serial?: string;
      providerId: string;
      signingKey: string;
      sealingKey: string;
      /** Why a higher rung was not granted. */
      refusals: string[];
    }
  | { ok: false; reason: string }
);

/**
 * What `evidence` proves under `anchors`, with the chain's dates read as of `at`. Never throws. `engines.signature`
 * swaps in another Ed25519 check with the same verdicts (a gateway hands it node's native one, as for receipts).
 */
export async function checkEvidence(evidence: Evidence, anchors: TrustAnchors, at: Date, engines: { signature?: typeof verifySignature } = {}): Promise<EvidenceVerdict> {
  const checkSignature = engines.signature ?? verifySignature;
  const { signature: signed, ...unsigned } = evidence;
  const signature: EvidenceChecks["signature"] = checkSignature(evidence.signing_key, SIGNATURE_DOMAINS.attestation, unsigned, signed)
    ? { ok: true }
    : { ok: false, reason: "the signature over the challenge does not verify with the presented signing key" };
  const transparent = transparentCheck(evidence, anchors, checkSignature);
  const hardware = await hardwareCheck(evidence, anchors, at);
  const checks = { signature, transparent, hardware };
  if (!signature.ok) return { checks, ok: false, reason: signature.reason };

  const refusals: string[] = [];
  let rung: TrustLevel = "process";
  if (transparent.presented && !transparent.ok) refusals.push(`transparent refused: ${transparent.reason}`);
  if (transparent.presented && transparent.ok) rung = "transparent";
  if (hardware.presented && rung === "process") refusals.push("hardware refused: it needs the transparent rung's evidence too");
  else if (hardware.presented && !hardware.ok) refusals.push(`hardware refused: ${hardware.reason}`);
  else if (hardware.presented && hardware.ok) rung = "hardware";
  const keys = { providerId: providerIdOf(evidence.signing_key), signingKey: evidence.signing_key, sealingKey: evidence.sealing_key };
  return { checks, ok: true, rung, ...(rung === "hardware" ? { serial: hardware.serial } : {}), ...keys, refusals };
}

function transparentCheck(evidence: Evidence, anchors: TrustAnchors, checkSignature: typeof verifySignature): RungCheck {
  if (!evidence.measurement && !evidence.manifest) return { presented: false };
  const reason = !evidence.measurement
    ? "the evidence carries a manifest but no code measurement"
    : !evidence.manifest
      ? "the evidence carries a code measurement but no release manifest"
      : manifestRefusal(evidence.manifest, anchors.releaseKeys, evidence.measurement, checkSignature);
  return reason === undefined ? { presented: true, ok: true } : { presented: true, ok: false, reason };
}

async function hardwareCheck(evidence: Evidence, anchors: TrustAnchors, at: Date): Promise<EvidenceChecks["hardware"]> {
  if (!evidence.chain) return { presented: false };
  let chain: Awaited<ReturnType<typeof verifyChain>>;
  try {
    chain = await verifyChain(evidence.chain, anchors.roots, keysDigest(evidence.signing_key, evidence.sealing_key), at);
  } catch (err) {
    // a certificate that parses but whose key or algorithm WebCrypto cannot use
    chain = { ok: false, reason: `the attestation chain cannot be checked (${(err as Error).message})` };
  }
  return chain.ok ? { presented: true, ok: true, serial: chain.serial } : { presented: true, ok: false, reason: chain.reason };
}

export type Grant =
  | { ok: true; rung: TrustLevel; serial?: string; /** Why a higher rung was not granted. */ refusals: string[] }
  | { ok: false; reason: string };

/** The coordinator's grant: the rung this evidence earns in answer to the challenge `nonce` it just sent, or why it earns none. */
export async function verifyEvidence(evidence: Evidence, nonce: string, anchors: TrustAnchors, now = new Date()): Promise<Grant> {
  if (evidence.nonce !== nonce) return { ok: false, reason: "the evidence does not answer the challenge just sent (replayed or stale nonce)" };
  const verdict = await checkEvidence(evidence, anchors, now);
  if (!verdict.ok) return { ok: false, reason: verdict.reason };
  return { ok: true, rung: verdict.rung, ...(verdict.serial === undefined ? {} : { serial: verdict.serial }), refusals: verdict.refusals };
}
