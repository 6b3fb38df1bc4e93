// DESIGN §10, the caller's own choice of candidates (client/candidates.ts): each provider's evidence checked under the
// caller's policy, never the gateway's word, and checked once per piece of evidence, so a caller pays for a check only
// on its first request to a new or changed provider; the listing names each provider's evidence by its digest, so
// evidence is fetched only when new, and the listing itself is kept a moment. A unit against a fake gateway holding
// real, signed evidence, counting the GETs it serves.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { CandidateChooser, type TrustPolicy } from "../../../client/candidates.ts";
import { sealingKeyPair } from "../../../src/crypto/seal.ts";
import { Signer } from "../../../src/crypto/signing.ts";
import { providerIdOf } from "../../../src/receipt/provider-id.ts";
import { attestationRecord } from "../../../src/trust/attestation-record.ts";
import { checkEvidence, evidenceDigest, signEvidence, type Evidence } from "../../../src/trust/attestation.ts";
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

/**
 * A gateway that lists `providers` as it is told (each with its evidence's digest, or `digest` when it lies about it,
 * or none, as a gateway older than the digest), and serves their evidence; `got` is every path it was asked for.
 */
function gateway(providers: Provider[], digest: (p: Provider) => string | undefined = (p) => evidenceDigest(p.evidence), barred: ReadonlySet<string> = new Set(), audited: object = {}) {
  const got: string[] = [];
  const get = async (path: string): Promise<Response> => {
    got.push(path);
    if (path === "/providers") {
      return Response.json(providers.map((p) => ({ id: p.id, model_ids: ["qwen3-4b"], trust: p.trust, busy: p.busy, waiting: p.waiting, ...(digest(p) === undefined ? {} : { evidence_sha256: digest(p) }), ...(barred.has(p.id) ? { in_rotation: false } : {}) })));
    }
    const p = providers.find((q) => path === `/providers/${q.id}/attestation`);
    if (p === undefined) return new Response("{}", { status: 404 });
    return Response.json({ ...attestationRecord(p.id, p.evidence, { rung: "transparent" }, new Date()), ...audited });
  };
  return Object.assign(get, { got, evidenceGets: () => got.filter((path) => path !== "/providers").length, listingGets: () => got.filter((path) => path === "/providers").length });
}

/** A chooser under `policy`, counting its evidence checks, on a clock the test moves (listings kept 2 s unless told). */
function chooser(policy: Partial<TrustPolicy> = {}, listingMaxAgeMs?: number) {
  let checks = 0;
  const counted: typeof checkEvidence = (...args) => {
    checks++;
    return checkEvidence(...args);
  };
  const clock = { now: 0 };
  const c = new CandidateChooser(
    { floor: "process", roots: [], releaseKeys: new Set([release.publicKey]), knownKeys: new Map(), ...policy },
    { check: counted, now: () => clock.now, ...(listingMaxAgeMs === undefined ? {} : { listingMaxAgeMs }) },
  );
  return { c, checks: () => checks, clock };
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

  it("never one an auditing gateway lists out of rotation (a failed audit), unless the caller pins it", async () => {
    const ps = await Promise.all([provider(), provider(true), provider(true, 1)]);
    const gw = gateway(ps, (p) => evidenceDigest(p.evidence), new Set([ps[0]!.id]));
    expect((await chooser().c.choose(gw, "qwen3-4b", undefined)).map((p) => p.id)).toEqual([ps[1]!.id, ps[2]!.id]);
    expect((await chooser().c.choose(gw, "qwen3-4b", ps[0]!.id)).map((p) => p.id)).toEqual([ps[0]!.id]);
  });

  it("an older auditing gateway's record (audits without suspect or barring) still parses: its provider is chosen", async () => {
    const ps = await Promise.all([provider()]);
    const older = { audits: { passed: 3, failed: 0, last: { id: "aud_1", at: 1_795_305_600, verdict: "pass" } }, in_rotation: true, failures: [] };
    expect((await chooser().c.choose(gateway(ps, (p) => evidenceDigest(p.evidence), new Set(), older), "qwen3-4b", undefined)).map((p) => p.id)).toEqual([ps[0]!.id]);
  });

  it("in the gateway's order (src/routing/choose.ts): the next one takes a refused one's place, and an ambiguous pin is refused as the gateway would", async () => {
    const ps = await Promise.all([provider(), provider(), provider(true), provider(true, 1)]);
    ps[0]!.trust = "hardware"; // listed above its evidence: refused, and the fourth in line is taken instead
    expect((await chooser().c.choose(gateway(ps), "qwen3-4b", undefined)).map((p) => p.id)).toEqual([ps[1]!.id, ps[2]!.id, ps[3]!.id]);
    const twins = [ps[1]!, { ...ps[2]!, id: `${ps[1]!.id.slice(0, 8)}${ps[2]!.id.slice(8)}` }];
    await expect(chooser().c.choose(gateway(twins), "qwen3-4b", ps[1]!.id.slice(0, 8))).rejects.toThrow(/matches 2 providers; send more of the id.*nothing was sent/);
  });

  it("a provider's evidence is fetched and checked once: later requests pay nothing until the listing names other evidence", async () => {
    const ps = await Promise.all([provider(), provider()]);
    const gw = gateway(ps);
    const { c, checks } = chooser({}, 0);
    await c.choose(gw, "qwen3-4b", undefined);
    expect([checks(), gw.listingGets(), gw.evidenceGets()]).toEqual([2, 1, 2]);
    await c.choose(gw, "qwen3-4b", undefined);
    expect([checks(), gw.listingGets(), gw.evidenceGets()]).toEqual([2, 2, 2]);
    ps[0]!.evidence = ps[0]!.attest(); // re-challenged: new evidence, a new digest listed, fetched and checked again
    await c.choose(gw, "qwen3-4b", undefined);
    expect([checks(), gw.listingGets(), gw.evidenceGets()]).toEqual([3, 3, 3]);
    expect(gw.got.at(-1)).toBe(`/providers/${ps[0]!.id}/attestation`);
  });

  it("a listing without digests (an older gateway) has each request fetch the evidence, and check it only when it changed", async () => {
    const ps = await Promise.all([provider(), provider()]);
    const gw = gateway(ps, () => undefined);
    const { c, checks } = chooser({}, 0);
    for (let i = 0; i < 3; i++) await c.choose(gw, "qwen3-4b", undefined);
    expect([checks(), gw.listingGets(), gw.evidenceGets()]).toEqual([2, 3, 6]);
  });

  it("a lying digest only makes the caller fetch again: evidence that does not hash to it is refused, and the next one taken", async () => {
    const [liar, honest] = await Promise.all([provider(), provider()]);
    const gw = gateway([liar, honest], (p) => (p === liar ? "ab".repeat(32) : evidenceDigest(p.evidence)));
    const { c } = chooser({}, 0);
    expect((await c.choose(gw, "qwen3-4b", undefined)).map((p) => p.id)).toEqual([honest.id]);
    expect((await c.choose(gw, "qwen3-4b", undefined)).map((p) => p.id)).toEqual([honest.id]);
    // the liar's evidence is fetched on every request (and never believed under the made-up digest); the honest one's once
    expect(gw.got.filter((path) => path === `/providers/${liar.id}/attestation`)).toHaveLength(2);
    expect(gw.got.filter((path) => path === `/providers/${honest.id}/attestation`)).toHaveLength(1);
    await expect(c.choose(gateway([liar], () => "ab".repeat(32)), "qwen3-4b", undefined)).rejects.toThrow(/its evidence is not the one the listing names.*nothing was sent/);
  });

  it("the listing is kept for listingMaxAgeMs (2 s by default): a later request then GETs nothing; after that, or once forgotten, it lists afresh", async () => {
    const ps = await Promise.all([provider(), provider()]);
    const gw = gateway(ps);
    const { c, clock } = chooser();
    await c.choose(gw, "qwen3-4b", undefined);
    clock.now = 1_999;
    await c.choose(gw, "qwen3-4b", undefined);
    expect(gw.got).toHaveLength(3); // one listing and two pieces of evidence, for both requests
    clock.now = 2_000;
    await c.choose(gw, "qwen3-4b", undefined);
    expect([gw.listingGets(), gw.evidenceGets()]).toEqual([2, 2]);
    c.forgetListing(); // what a request whose candidates failed does
    await c.choose(gw, "qwen3-4b", undefined);
    expect([gw.listingGets(), gw.evidenceGets()]).toEqual([3, 2]);
  });

  it("a kept listing that yields no candidate is not the last word: the caller lists afresh before it gives up", async () => {
    const [first, arrived] = await Promise.all([provider(), provider()]);
    const providers = [first];
    const gw = gateway(providers);
    const { c } = chooser();
    await c.choose(gw, "qwen3-4b", undefined);
    providers.push(arrived); // listed since: the kept listing does not name it, a fresh one does
    expect((await c.choose(gw, "qwen3-4b", arrived.id)).map((p) => p.id)).toEqual([arrived.id]);
    expect(gw.listingGets()).toBe(2);
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
