// DESIGN §10, the caller's own choice of candidates (client/candidates.ts): each provider's evidence checked under the
// caller's policy, never the gateway's word, and checked once per piece of evidence, so a caller pays for a check only
// on its first request to a new or changed provider. A unit against a fake gateway holding real, signed evidence.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { CandidateChooser, type TrustPolicy } from "../../../client/candidates.ts";
import { sealingKeyPair } from "../../../src/crypto/seal.ts";
import { Signer } from "../../../src/crypto/signing.ts";
import { providerIdOf } from "../../../src/receipt/provider-id.ts";
import { attestationRecord } from "../../../src/trust/attestation-record.ts";
import { checkEvidence, signEvidence, type Evidence } from "../../../src/trust/attestation.ts";
import { signManifest } from "../../../src/trust/release-manifest.ts";

const release = Signer.fromSeed(randomBytes(32));
const MEASUREMENT = "cd".repeat(32);

/** A provider as an agent signs its evidence: transparent when its manifest is signed by `release`. */
async function provider(busy = false, waiting = 0) {
  const signer = Signer.fromSeed(randomBytes(32));
  const sealing = (await sealingKeyPair(randomBytes(32))).publicKey;
  const attest = (): Evidence =>
    signEvidence(signer, { nonce: randomBytes(32).toString("hex"), signing_key: signer.publicKey, sealing_key: sealing, measurement: MEASUREMENT, manifest: signManifest(release, [MEASUREMENT]) });
  return { id: providerIdOf(signer.publicKey), signing: signer.publicKey, sealing, evidence: attest(), attest, trust: "transparent", busy, waiting };
}
type Provider = Awaited<ReturnType<typeof provider>>;

/** A gateway that lists `providers` as it is told, and serves their evidence. */
function gateway(providers: Provider[]) {
  return async (path: string): Promise<Response> => {
    if (path === "/providers") return Response.json(providers.map(({ id, trust, busy, waiting }) => ({ id, model_ids: ["qwen3-4b"], trust, busy, waiting })));
    const p = providers.find((q) => path === `/providers/${q.id}/attestation`);
    if (p === undefined) return new Response("{}", { status: 404 });
    return Response.json(attestationRecord(p.id, p.evidence, { rung: "transparent" }, new Date()));
  };
}

function chooser(policy: Partial<TrustPolicy> = {}) {
  let checks = 0;
  const counted: typeof checkEvidence = (...args) => {
    checks++;
    return checkEvidence(...args);
  };
  const c = new CandidateChooser({ floor: "process", roots: [], releaseKeys: new Set([release.publicKey]), knownKeys: new Map(), ...policy }, counted);
  return { c, checks: () => checks };
}

describe("DESIGN §10 Gateway-blind: the caller chooses its candidates by its own checks", () => {
  it("up to three, least loaded first, each with the keys its evidence binds; a pin takes one", async () => {
    const ps = await Promise.all([provider(true, 2), provider(), provider(true), provider(true, 1)]);
    const { c } = chooser();
    const chosen = await c.choose(gateway(ps), "qwen3-4b", undefined);
    expect(chosen.map((p) => p.id)).toEqual([ps[1]!.id, ps[2]!.id, ps[3]!.id]);
    expect(chosen[0]).toMatchObject({ signing_key: ps[1]!.signing, trust: "transparent" });
    expect(Buffer.from(chosen[0]!.sealingKey).toString("hex")).toBe(ps[1]!.sealing);
    expect((await c.choose(gateway(ps), "qwen3-4b", ps[0]!.id.slice(0, 12))).map((p) => p.id)).toEqual([ps[0]!.id]);
  });

  it("in the gateway's order (src/routing/choose.ts): the next one takes a refused one's place, and an ambiguous pin is refused as the gateway would", async () => {
    const ps = await Promise.all([provider(), provider(), provider(true), provider(true, 1)]);
    ps[0]!.trust = "hardware"; // listed above its evidence: refused, and the fourth in line is taken instead
    expect((await chooser().c.choose(gateway(ps), "qwen3-4b", undefined)).map((p) => p.id)).toEqual([ps[1]!.id, ps[2]!.id, ps[3]!.id]);
    const twins = [ps[1]!, { ...ps[2]!, id: `${ps[1]!.id.slice(0, 8)}${ps[2]!.id.slice(8)}` }];
    await expect(chooser().c.choose(gateway(twins), "qwen3-4b", ps[1]!.id.slice(0, 8))).rejects.toThrow(/matches 2 providers; send more of the id.*nothing was sent/);
  });

  it("a provider's evidence is checked once: later requests pay nothing until its evidence changes", async () => {
    const ps = await Promise.all([provider(), provider()]);
    const { c, checks } = chooser();
    await c.choose(gateway(ps), "qwen3-4b", undefined);
    expect(checks()).toBe(2);
    await c.choose(gateway(ps), "qwen3-4b", undefined);
    expect(checks()).toBe(2);
    ps[0]!.evidence = ps[0]!.attest(); // re-challenged: new evidence, checked again
    await c.choose(gateway(ps), "qwen3-4b", undefined);
    expect(checks()).toBe(3);
  });

  it("never one listed above what its evidence proves to the caller, below the caller's floor, or with a key other than the one known", async () => {
    const [honest, inflated, stranger] = await Promise.all([provider(), provider(), provider()]);
    inflated.trust = "hardware";
    // without the release key the caller trusts, transparent evidence proves only process
    await expect(chooser({ releaseKeys: new Set() }).c.choose(gateway([honest]), "qwen3-4b", undefined)).rejects.toThrow(/listed at transparent, but its evidence proves process.*nothing was sent/);
    await expect(chooser().c.choose(gateway([inflated]), "qwen3-4b", undefined)).rejects.toThrow(/listed at hardware, but its evidence proves transparent/);
    await expect(chooser({ floor: "hardware" }).c.choose(gateway([honest]), "qwen3-4b", undefined)).rejects.toThrow(/below the floor hardware/);
    await expect(chooser({ knownKeys: new Map([[stranger.id, honest.signing]]) }).c.choose(gateway([stranger]), "qwen3-4b", undefined)).rejects.toThrow(/not the one the caller knew/);
    expect((await chooser().c.choose(gateway([inflated, honest]), "qwen3-4b", undefined)).map((p) => p.id)).toEqual([honest.id]);
  });
});
