// DESIGN §4 trust rungs: what evidence earns process, transparent and hardware, and each forgery refused.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signEvidence, verifyEvidence, type TrustAnchors, type UnsignedEvidence } from "../../src/trust/attestation.ts";
import { keysDigest, splitPem } from "../../src/trust/hardware-chain.ts";
import { loadRoots } from "../../src/trust/anchor-files.ts";
import { signManifest } from "../../src/trust/release-manifest.ts";
import { sealingKeyPair } from "../../src/crypto/seal.ts";
import { Signer } from "../../src/crypto/signing.ts";
import { ATTESTOR, makeTestCa, type TestCa } from "../fixtures/test-ca.ts";
import { tempDir } from "../fixtures/tiny-catalog.ts";
import { rmSync } from "node:fs";

const dir = tempDir();
const agent = Signer.fromSeed(randomBytes(32));
const release = Signer.fromSeed(randomBytes(32));
const measurement = "ab".repeat(32);
const nonce = randomBytes(32).toString("hex");
let sealingKey: string;
let ca: TestCa;
let anchors: TrustAnchors;

function chain(issuer: TestCa, mode: "ok" | "expired" | "unbound" = "ok"): string[] {
  const out = execFileSync(process.execPath, [ATTESTOR, "--ca", issuer.issuerDir, "--mode", mode, keysDigest(agent.publicKey, sealingKey)]);
  return splitPem(out.toString());
}

function evidence(over: Partial<UnsignedEvidence> = {}): UnsignedEvidence {
  return { nonce, signing_key: agent.publicKey, sealing_key: sealingKey, ...over };
}
const transparent = () => ({ measurement, manifest: signManifest(release, [measurement]) });

beforeAll(async () => {
  sealingKey = (await sealingKeyPair(randomBytes(32))).publicKey;
  ca = await makeTestCa(`${dir}/ca`);
  anchors = { releaseKeys: new Set([release.publicKey]), roots: loadRoots(ca.rootsDir) };
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("DESIGN §4 Trust rungs: each rung granted", () => {
  it("process: a signature over the fresh nonce and both public keys", async () => {
    expect(await verifyEvidence(signEvidence(agent, evidence()), nonce, anchors)).toEqual({ ok: true, rung: "process", refusals: [] });
  });

  it("transparent: the code measurement is listed in a manifest signed by a trusted release key", async () => {
    expect(await verifyEvidence(signEvidence(agent, evidence(transparent())), nonce, anchors)).toEqual({ ok: true, rung: "transparent", refusals: [] });
  });

  it("hardware: an X.509 chain to a trusted root whose leaf binds the keys and carries the serial", async () => {
    const grant = await verifyEvidence(signEvidence(agent, evidence({ ...transparent(), chain: chain(ca) })), nonce, anchors);
    expect(grant).toEqual({ ok: true, rung: "hardware", serial: "C02TEST0001", refusals: [] });
  });
});

describe("DESIGN §4 Trust rungs: forgeries refused with a reason", () => {
  it("a replayed (stale) nonce is refused outright", async () => {
    const grant = await verifyEvidence(signEvidence(agent, evidence()), randomBytes(32).toString("hex"), anchors);
    expect(grant).toEqual({ ok: false, reason: expect.stringContaining("replayed or stale nonce") });
  });

  it("a signature by another key, or over other content, is refused outright", async () => {
    const forged = { ...signEvidence(Signer.fromSeed(randomBytes(32)), evidence()), signing_key: agent.publicKey };
    expect(await verifyEvidence(forged, nonce, anchors)).toMatchObject({ ok: false, reason: expect.stringContaining("does not verify") });
    const edited = { ...signEvidence(agent, evidence()), name: "edited after signing" };
    expect(await verifyEvidence(edited, nonce, anchors)).toMatchObject({ ok: false });
  });

  it("a tampered manifest (a measurement added after signing) earns process only", async () => {
    const manifest = signManifest(release, ["cd".repeat(32)]);
    const tampered = { ...manifest, measurements: [...manifest.measurements, measurement] };
    const grant = await verifyEvidence(signEvidence(agent, evidence({ measurement, manifest: tampered })), nonce, anchors);
    expect(grant).toEqual({ ok: true, rung: "process", refusals: [expect.stringContaining("tampered manifest")] });
  });

  it("a manifest from an untrusted release key, or one that does not list the measurement, earns process only", async () => {
    const stranger = signManifest(Signer.fromSeed(randomBytes(32)), [measurement]);
    const notListed = signManifest(release, ["cd".repeat(32)]);
    for (const [manifest, why] of [[stranger, "not a trusted release key"], [notListed, "not listed"]] as const) {
      const grant = await verifyEvidence(signEvidence(agent, evidence({ measurement, manifest })), nonce, anchors);
      expect(grant).toEqual({ ok: true, rung: "process", refusals: [expect.stringContaining(why)] });
    }
  });

  it.each([
    ["wrong root", async () => chain(await makeTestCa(`${dir}/other`, "Other Root")), "does not lead to a trusted root"],
    ["key not bound", async () => chain(ca, "unbound"), "does not bind this agent's keys"],
    ["expired", async () => chain(ca, "expired"), "is not valid now"],
  ] as const)("hardware evidence with a %s chain earns transparent only", async (_name, makeChain, why) => {
    const grant = await verifyEvidence(signEvidence(agent, evidence({ ...transparent(), chain: await makeChain() })), nonce, anchors);
    expect(grant).toEqual({ ok: true, rung: "transparent", refusals: [expect.stringContaining(why)] });
  });

  it("a chain without the transparent rung's evidence does not earn hardware", async () => {
    const grant = await verifyEvidence(signEvidence(agent, evidence({ chain: chain(ca) })), nonce, anchors);
    expect(grant).toEqual({ ok: true, rung: "process", refusals: [expect.stringContaining("needs the transparent rung")] });
  });
});
