// DESIGN §11 at the gateway: the copy holds each provider at what its evidence proves to this gateway, never at the
// coordinator's word. A unit against a fake coordinator that holds real evidence (signed with real keys): a made-up
// rung, serial or keys are replaced by the evidence's, evidence that does not verify keeps a provider out, and each
// piece of evidence is fetched and checked once, a few at a time.
import { randomBytes } from "node:crypto";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { MAX_CHECKING, ProviderChecks } from "../../../../gateway/directory/provider-checks.ts";
import type { DirectoryDelta } from "../../../../gateway/directory/directory-copy.ts";
import { sealingKeyPair } from "../../../../src/crypto/seal.ts";
import { Signer } from "../../../../src/crypto/signing.ts";
import { providerIdOf } from "../../../../src/receipt/provider-id.ts";
import { evidenceDigest, signEvidence, type Evidence } from "../../../../src/trust/attestation.ts";
import { signManifest } from "../../../../src/trust/release-manifest.ts";
import type { DirectoryEntry } from "../../../../src/wire/gateway.ts";

const release = Signer.fromSeed(randomBytes(32));
const MEASUREMENT = "ab".repeat(32);
const anchors = { releaseKeys: new Set([release.publicKey]), roots: [] };

/** A provider's keys and evidence (transparent: a measurement its trusted manifest lists), as an agent signs it. */
async function provider(over: Partial<Evidence> = {}) {
  const signer = Signer.fromSeed(randomBytes(32));
  const sealing = (await sealingKeyPair(randomBytes(32))).publicKey;
  const attest = (extra: Partial<Evidence> = {}) =>
    signEvidence(signer, { nonce: randomBytes(32).toString("hex"), signing_key: signer.publicKey, sealing_key: sealing, measurement: MEASUREMENT, manifest: signManifest(release, [MEASUREMENT]), ...over, ...extra });
  const evidence = attest();
  return { id: providerIdOf(signer.publicKey), signing: signer.publicKey, sealing, evidence, attest };
}

/** The coordinator's entry for `evidence`, saying what the coordinator says. */
const entry = (evidence: Evidence, over: Partial<DirectoryEntry> = {}): DirectoryEntry => ({
  id: providerIdOf(evidence.signing_key), model_ids: ["qwen3-4b"], trust: "transparent", busy: false, waiting: 0, last_assigned: 0,
  signing_key: evidence.signing_key, sealing_key: evidence.sealing_key, evidence_sha256: evidenceDigest(evidence), ...over,
});

/** ProviderChecks against a coordinator that answers from `held` (by provider id), counting its fetches. */
function checks(held: Map<string, unknown>, answer: (id: string) => Promise<unknown> = async (id) => held.get(id) ?? null) {
  const fetched: string[] = [];
  const copy: { put: DirectoryEntry[]; gone: string[] }[] = [];
  let landed: () => void = () => undefined;
  const vetting = new ProviderChecks({
    anchors,
    log: pino({ level: "silent" }),
    fetch: (id) => {
      fetched.push(id);
      return answer(id);
    },
    checked: (put, gone) => {
      copy.push({ put, gone });
      landed();
    },
  });
  const next = () => new Promise<void>((resolve) => (landed = resolve));
  return { vetting, fetched, copy, next };
}

const delta = (put: DirectoryEntry[], more: Partial<DirectoryDelta> = {}): DirectoryDelta => ({ put, gone: [], ...more });

describe("DESIGN §11 The gateway re-checks each provider's evidence: rung, serial and keys are the evidence's", () => {
  it("a provider the coordinator calls hardware with a serial, whose evidence proves transparent, enters the copy at transparent with no serial", async () => {
    const p = await provider();
    const { vetting, copy, next } = checks(new Map([[p.id, p.evidence]]));
    const landed = next();
    // not in the copy before its evidence is checked, and the copy is not ready before it
    expect(vetting.vet(delta([entry(p.evidence, { trust: "hardware", serial: "C02FAKE0001" })], { reset: true }))).toEqual({ reset: true, put: [], gone: [] });
    expect(vetting.settled).toBe(false);
    await landed;
    expect(vetting.settled).toBe(true);
    expect(copy).toEqual([{ put: [entry(p.evidence, { trust: "transparent" })], gone: [] }]);
    expect(copy[0]!.put[0]).not.toHaveProperty("serial");
  });

  it("the keys sealed to and checked are the evidence's, whatever keys the entry names", async () => {
    const p = await provider();
    const other = await provider();
    const { vetting, copy, next } = checks(new Map([[p.id, p.evidence]]));
    const landed = next();
    vetting.vet(delta([entry(p.evidence, { signing_key: other.signing, sealing_key: other.sealing })], { reset: true }));
    await landed;
    expect(copy[0]!.put[0]).toMatchObject({ id: p.id, signing_key: p.signing, sealing_key: p.sealing });
  });

  it("under a gateway that trusts no release key, the same evidence proves process only", async () => {
    const p = await provider();
    const fetched: string[] = [];
    let landed!: () => void;
    const put: DirectoryEntry[] = [];
    const bare = new ProviderChecks({
      anchors: { releaseKeys: new Set(), roots: [] },
      log: pino({ level: "silent" }),
      fetch: async (id) => {
        fetched.push(id);
        return p.evidence;
      },
      checked: (entries) => {
        put.push(...entries);
        landed();
      },
    });
    const done = new Promise<void>((resolve) => (landed = resolve));
    bare.vet(delta([entry(p.evidence)], { reset: true }));
    await done;
    expect(put.map((e) => e.trust)).toEqual(["process"]);
  });

  it("evidence whose signature does not verify, or that is another provider's, keeps the provider out", async () => {
    const forged = await provider();
    const tampered = { ...forged.evidence, sealing_key: (await sealingKeyPair(randomBytes(32))).publicKey };
    const thief = await provider();
    const victim = await provider();
    const { vetting, copy, next } = checks(new Map<string, unknown>([[forged.id, tampered], [thief.id, victim.evidence]]));
    let landed = next();
    vetting.vet(delta([entry(forged.evidence, { evidence_sha256: evidenceDigest(tampered) })], { reset: true }));
    await landed;
    landed = next();
    // the entry names the victim's evidence under the thief's id
    vetting.vet(delta([{ ...entry(victim.evidence), id: thief.id }]));
    await landed;
    expect(copy).toEqual([{ put: [], gone: [forged.id] }, { put: [], gone: [thief.id] }]);
  });

  it("a listed provider whose newer evidence fails leaves the copy; until its check lands it stays at its last verdict", async () => {
    const p = await provider();
    const held = new Map<string, unknown>([[p.id, p.evidence]]);
    const { vetting, copy, next } = checks(held);
    let landed = next();
    vetting.vet(delta([entry(p.evidence)], { reset: true }));
    await landed;
    // re-attested: fresh evidence, but now broken
    const fresh = { ...p.attest(), signature: "00".repeat(64) };
    held.set(p.id, fresh);
    landed = next();
    const meanwhile = vetting.vet(delta([entry(fresh, { busy: true })]));
    expect(meanwhile.put).toEqual([entry(p.evidence, { busy: true, evidence_sha256: evidenceDigest(fresh) })]);
    await landed;
    expect(copy.at(-1)).toEqual({ put: [], gone: [p.id] });
  });

  it("each piece of evidence is fetched and checked once: the coordinator's load changes cost nothing", async () => {
    const p = await provider();
    const { vetting, fetched, copy, next } = checks(new Map([[p.id, p.evidence]]));
    const landed = next();
    vetting.vet(delta([entry(p.evidence)], { reset: true }));
    await landed;
    for (let waiting = 1; waiting <= 50; waiting++) expect(vetting.vet(delta([entry(p.evidence, { waiting })])).put).toEqual([entry(p.evidence, { waiting })]);
    // and after a reset (the link came back) the verdict is still known
    expect(vetting.vet(delta([entry(p.evidence)], { reset: true })).put).toEqual([entry(p.evidence)]);
    expect(fetched).toEqual([p.id]);
    expect(copy).toHaveLength(1);
  });

  it(`checks ${MAX_CHECKING} providers at a time, whatever the directory holds`, async () => {
    const many = await Promise.all(Array.from({ length: 10 }, () => provider()));
    const { vetting, fetched } = checks(new Map(), () => new Promise<unknown>(() => undefined));
    vetting.vet(delta(many.map((p) => entry(p.evidence)), { reset: true }));
    await Promise.resolve();
    expect(fetched).toHaveLength(MAX_CHECKING);
  });

  it("the public record is this gateway's: the rung and time of its own check, the chain withheld below hardware", async () => {
    const p = await provider();
    const { vetting } = checks(new Map());
    const record = await vetting.record(p.id, p.evidence);
    expect(record).toMatchObject({ object: "provider.attestation", provider_id: p.id, rung: "transparent", evidence: p.evidence });
    expect(await vetting.record((await provider()).id, p.evidence)).toBeUndefined();
    expect(await vetting.record(p.id, { ...p.evidence, signature: "00".repeat(64) })).toBeUndefined();
  });
});
