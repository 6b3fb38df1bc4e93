// `svc-agent doctor`'s trust checks: the attestor runs and its chain verifies here, and the rung this
// machine's evidence earns, judged with src/trust/attestation.ts as a coordinator judges it. A coordinator's trust
// anchors live with the operator: `--release-keys` and `--roots` bring them; without them doctor says what
// it assumed.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { signEvidence, verifyEvidence, type TrustAnchors } from "../../src/trust/attestation.ts";
import { keysDigest, parseCertificate, verifyChain } from "../../src/trust/hardware-chain.ts";
import { loadManifest, loadReleaseKeys, loadRoots } from "../../src/trust/anchor-files.ts";
import { measure } from "../../src/trust/measure.ts";
import type { ReleaseManifest } from "../../src/trust/release-manifest.ts";
import { runAttestor } from "../daemon/attestor.ts";
import type { AgentKeys } from "../daemon/identity.ts";
import { BUNDLED_MANIFEST_PATH } from "../daemon/start-options.ts";
import { fail, pass, type Check } from "./check.ts";

export interface TrustInput {
  keys: Pick<AgentKeys, "signer" | "sealing">;
  attestor?: string;
  releaseManifest?: string;
  releaseKeys?: string;
  roots?: string;
  /** Whether a `--token` or SVC_PROVIDER_TOKEN is set. */
  token: boolean;
}

/** The attestor's chain, and its check: it runs, prints PEMs, and they verify for these keys. */
export async function attestorCheck(input: TrustInput): Promise<{ check: Check; chain?: string[] }> {
  const { attestor, keys } = input;
  if (attestor === undefined) return { check: { ...pass("attestor", "no --attestor: no hardware rung asked for"), needed: false } };
  const digest = keysDigest(keys.signer.publicKey, keys.sealing.publicKey);
  let chain: string[];
  try {
    chain = await runAttestor(attestor, digest);
  } catch (err) {
    return { check: fail("attestor", `attestor ${attestor}: ${(err as Error).message}`, "run the attestor by hand with a 64-hex digest argument and fix what it says") };
  }
  // without the coordinator's roots, the chain can still be checked up to its own top certificate
  const roots = input.roots === undefined ? [parseCertificate(chain.at(-1)!)] : loadRoots(input.roots);
  const verdict = await verifyChain(chain, roots, digest);
  const against = input.roots === undefined ? "its own top certificate (pass --roots DIR for the coordinator's)" : `the roots in ${input.roots}`;
  if (!verdict.ok) return { check: fail("attestor", `attestor chain does not verify against ${against}: ${verdict.reason}`, "fix the attestor or its certificates"), chain };
  return { check: pass("attestor", `attestor chain (${chain.length} certificates, serial ${verdict.serial}) binds these keys and verifies against ${against}`), chain };
}

/** The rung the evidence start would send earns, and whether the coordinator would admit it at all. */
export async function rungChecks(input: TrustInput, chain: string[] | undefined): Promise<Check[]> {
  const manifestPath = input.releaseManifest ?? (existsSync(BUNDLED_MANIFEST_PATH) ? BUNDLED_MANIFEST_PATH : undefined);
  let manifest: ReleaseManifest | undefined;
  const assumed: string[] = [];
  try {
    manifest = manifestPath === undefined ? undefined : loadManifest(manifestPath);
  } catch (err) {
    return [fail("rung", (err as Error).message, "pass the release manifest that shipped with this build", { needed: false })];
  }
  const anchors: TrustAnchors = {
    releaseKeys: input.releaseKeys !== undefined ? loadReleaseKeys(input.releaseKeys) : new Set(manifest ? [manifest.release_key] : []),
    roots: input.roots !== undefined ? loadRoots(input.roots) : chain ? [parseCertificate(chain.at(-1)!)] : [],
  };
  if (manifest && input.releaseKeys === undefined) assumed.push(`the coordinator trusts release key ${manifest.release_key.slice(0, 12)}… (check with --release-keys FILE)`);
  if (chain && input.roots === undefined) assumed.push("the coordinator trusts the chain's top certificate (check with --roots DIR)");
  const nonce = randomBytes(32).toString("hex");
  const evidence = signEvidence(input.keys.signer, {
    nonce,
    signing_key: input.keys.signer.publicKey,
    sealing_key: input.keys.sealing.publicKey,
    ...(manifest ? { measurement: measure(), manifest } : {}),
    ...(chain ? { chain } : {}),
  });
  const grant = await verifyEvidence(evidence, nonce, anchors);
  if (!grant.ok) return [fail("rung", `no rung: ${grant.reason}`, "report this: the agent's own evidence should always verify")];
  const why = [...grant.refusals, ...(manifest ? [] : ["no release manifest (a release ships one; else --release-manifest FILE)"])];
  const rung: Check = {
    ...pass("rung", `rung this machine would be granted: ${grant.rung}${why.length > 0 ? ` (${why.join("; ")})` : ""}${assumed.length > 0 ? `, assuming ${assumed.join(" and ")}` : ""}`),
    needed: false,
    data: { rung: grant.rung, refusals: grant.refusals, assumed },
  };
  // the coordinator admits a machine with a token, at the hardware rung, or under --open-enrollment
  const admission =
    input.token || grant.rung === "hardware"
      ? pass("enrollment", input.token ? "an enrollment token is set" : "no enrollment token needed at the hardware rung")
      : fail("enrollment", "no enrollment token (--token-file, SVC_PROVIDER_TOKEN): a coordinator admits this machine only under --open-enrollment", "ask the operator for one (svc-gateway providers enroll) and pass --token-file FILE", { needed: false });
  return [rung, admission];
}
