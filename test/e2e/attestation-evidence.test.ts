// Public attestation evidence end to end: a standalone coordinator with a trusted release key and a throwaway
// CA, a gateway, agents at each rung. `GET /v1/providers/{id}/attestation` is saved and re-verified offline by
// `svc-agent verify --attestation`; tampered copies are refused naming the check; no serial below hardware.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AttestationRecord } from "../../src/trust/attestation-record.ts";
import type { Evidence } from "../../src/trust/attestation.ts";
import { Attestations } from "../../gateway/coordinator/attestations.ts";
import type { AgentPort } from "../../gateway/coordinator/registry.ts";
import { runCli } from "../../harness/cli.ts";
import { startCluster, type Cluster } from "../fixtures/cluster.ts";
import { get, listProviders, waitForProvider, type AgentProcess } from "../fixtures/gateway.ts";
import { makeTestCa } from "../fixtures/test-ca.ts";

type Gateway = Awaited<ReturnType<Cluster["startGateway"]>>;
let cluster: Cluster;
let gateway: Gateway;
/** Two more gateways on the same coordinator, for the tests of what each gateway lists: one without anchors, one with a floor. */
let bareGateway: Gateway;
let hardwareFloorGateway: Gateway;
const agents: Record<"process" | "transparent" | "hardware" | "untrustedChain", AgentProcess> = {} as never;
const dir = mkdtempSync(join(tmpdir(), "svc-attestation-"));

beforeAll(async () => {
  cluster = await startCluster();
  // a chain to a root the coordinator does not trust: transparent, and its chain (with the serial) withheld
  const other = await makeTestCa(join(cluster.tiny.dir, "other-ca"), "Other Root");
  // the gateways and the agents need only the coordinator: they start side by side
  [gateway, bareGateway, hardwareFloorGateway, agents.process, agents.transparent, agents.hardware, agents.untrustedChain] = await Promise.all([
    cluster.startGateway(),
    cluster.startGateway([], { anchors: false }),
    cluster.startGateway(["--trust-floor", "hardware"]),
    cluster.startAgent("process"),
    cluster.startAgent("transparent"),
    cluster.startAgent("hardware"),
    cluster.startAgent("process", { args: ["--release-manifest", cluster.manifestPath, "--attestor", other.attestor()] }),
  ]);
  await Promise.all([
    ...Object.values(agents).map((agent) => waitForProvider(gateway, agent.providerId)),
    // the floor's gateway has heard of the providers it lists: a 404 there is the floor's, not a late feed's
    waitForProvider(hardwareFloorGateway, agents.hardware.providerId),
  ]);
}, 120_000);
afterAll(async () => {
  await cluster.stop();
  rmSync(dir, { recursive: true, force: true });
});

const attestation = (id: string, key = gateway.key) => get({ url: gateway.url, key }, `/v1/providers/${id}/attestation`);

async function record(agent: AgentProcess): Promise<AttestationRecord> {
  const res = await attestation(agent.providerId);
  expect(res.status).toBe(200);
  return (await res.json()) as AttestationRecord;
}

let saved = 0;
function save(body: unknown): string {
  const path = join(dir, `record-${saved++}.json`);
  writeFileSync(path, typeof body === "string" ? body : JSON.stringify(body, null, 2));
  return path;
}

const verify = (...args: string[]) => runCli("svc-agent", ["verify", ...args]);
const anchors = () => ["--roots", cluster.ca.rootsDir, "--release-keys", cluster.releaseKeysPath];
const lastLine = (stdout: string) => stdout.trimEnd().split("\n").at(-1);

describe("GET /v1/providers/{id}/attestation", () => {
  it("returns the evidence the coordinator verified: nonce, signature, both keys, the time and the rung", async () => {
    const body = await record(agents.process);
    expect(body).toEqual({
      object: "provider.attestation",
      provider_id: agents.process.providerId,
      rung: "process",
      verified_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      evidence: {
        nonce: expect.stringMatching(/^[0-9a-f]{64}$/),
        signing_key: expect.stringMatching(/^[0-9a-f]{64}$/),
        sealing_key: expect.stringMatching(/^[0-9a-f]{64}$/),
        signature: expect.stringMatching(/^[0-9a-f]{128}$/),
      },
    });
    expect(Date.now() - Date.parse(body.verified_at)).toBeLessThan(120_000);
  });

  it("at hardware: the code measurement, the release manifest, the chain PEMs and the serial", async () => {
    const body = await record(agents.hardware);
    expect(body).toMatchObject({ rung: "hardware", serial: "C02TEST0001" });
    expect(body.evidence.measurement).toMatch(/^[0-9a-f]{64}$/);
    expect(body.evidence.manifest).toMatchObject({ release_key: cluster.releaseKey.publicKey, measurements: [body.evidence.measurement] });
    expect(body.evidence.chain).toHaveLength(2);
    for (const pem of body.evidence.chain!) expect(pem).toMatch(/^-----BEGIN CERTIFICATE-----\n[\s\S]+-----END CERTIFICATE-----$/);
  });

  it("finds a provider by a unique prefix of 8 hex characters, as a pin does", async () => {
    const res = await attestation(agents.hardware.providerId.slice(0, 8).toUpperCase());
    expect(res.status).toBe(200);
    expect(((await res.json()) as AttestationRecord).provider_id).toBe(agents.hardware.providerId);
  });

  it("no serial and no chain below hardware, even when the agent presented one", async () => {
    for (const agent of [agents.process, agents.transparent, agents.untrustedChain]) {
      const text = await (await attestation(agent.providerId)).text();
      expect(text).not.toContain("C02TEST0001");
      expect(text).not.toContain("CERTIFICATE");
      expect(JSON.parse(text)).not.toHaveProperty("serial");
    }
    const withheld = await record(agents.untrustedChain);
    expect(withheld).toMatchObject({ rung: "transparent", chain_withheld: true });
    expect(withheld.evidence).not.toHaveProperty("chain");
  });

  it("401 invalid_api_key without a key or with a wrong one", async () => {
    const bare = await fetch(`${gateway.url}/v1/providers/${agents.process.providerId}/attestation`);
    expect([bare.status, ((await bare.json()) as { error: { code: string } }).error.code]).toEqual([401, "invalid_api_key"]);
    expect((await attestation(agents.process.providerId, "sk-svc_wrong")).status).toBe(401);
  });

  it("404 provider_not_found in the error envelope for an unknown id; 400 for an id too short to be one", async () => {
    const res = await attestation("0".repeat(64));
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      error: { message: expect.stringContaining("0".repeat(64)), type: "invalid_request_error", code: "provider_not_found", param: null, svc_action: "fix_request" },
    });
    const short = await attestation(agents.process.providerId.slice(0, 7));
    expect([short.status, ((await short.json()) as { error: { code: string } }).error.code]).toEqual([400, "invalid_value"]);
  });

  it("the rung is what the evidence proves to this gateway: one without the coordinator's anchors lists every provider at process, and shows its own record", async () => {
    const bare = bareGateway;
    for (const agent of Object.values(agents)) await waitForProvider(bare, agent.providerId);
    const listed = await listProviders(bare);
    expect(Object.fromEntries(listed.map((p) => [p.id, [p.trust, p.serial]]))).toEqual(Object.fromEntries(Object.values(agents).map((a) => [a.providerId, ["process", undefined]])));
    const res = await get(bare, `/v1/providers/${agents.hardware.providerId}/attestation`);
    const body = (await res.json()) as AttestationRecord;
    expect(body).toMatchObject({ rung: "process", chain_withheld: true });
    expect(JSON.stringify(body)).not.toContain("C02TEST0001");
  });

  it("a provider below the gateway's floor is not found, as it is not listed", async () => {
    const high = hardwareFloorGateway;
    expect((await get(high, `/v1/providers/${agents.process.providerId}/attestation`)).status).toBe(404);
    expect((await get(high, `/v1/providers/${agents.hardware.providerId}/attestation`)).status).toBe(200);
  });
});

describe("svc-agent verify --attestation FILE", () => {
  it("a process record is VALID with no anchors: the signature over the nonce is the whole evidence", async () => {
    const result = await verify("--attestation", save(await record(agents.process)));
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain(`ok    provider_id: the SHA-256 of signing key`);
    expect(result.stdout).toContain(`ok    signature: Ed25519 by the signing key over nonce`);
    expect(lastLine(result.stdout)).toBe(`VALID: provider ${agents.process.providerId} proves rung process`);
  });

  it("a hardware record is VALID at hardware under the coordinator's roots and release keys", async () => {
    const result = await verify("--attestation", save(await record(agents.hardware)), ...anchors());
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain("ok    transparent: code measurement");
    expect(result.stdout).toContain("ok    hardware: 2 certificates lead to a trusted root");
    expect(result.stdout).toContain("ok    serial: C02TEST0001, as the leaf names it");
    expect(lastLine(result.stdout)).toBe(`VALID: provider ${agents.hardware.providerId} proves rung hardware (serial C02TEST0001)`);
  });

  it("a transparent record is VALID at transparent with --release-keys", async () => {
    const result = await verify("--attestation", save(await record(agents.transparent)), "--release-keys", cluster.releaseKeysPath);
    expect([result.code, lastLine(result.stdout)]).toEqual([0, `VALID: provider ${agents.transparent.providerId} proves rung transparent`]);
  });

  it("without the anchors a rung needs, exit 3 NOT CHECKED, never VALID", async () => {
    const path = save(await record(agents.hardware));
    const bare = await verify("--attestation", path);
    expect(bare.code, bare.stdout).toBe(3);
    expect(bare.stdout).toContain("--    transparent: not checked: pass --release-keys FILE");
    expect(bare.stdout).toContain("--    hardware: not checked: pass --roots DIR");
    expect(lastLine(bare.stdout)).toBe("NOT CHECKED: the record claims rung hardware; what could be checked proves process (see the -- lines)");
    const otherRoots = await makeTestCa(join(dir, "stranger-ca"), "Stranger Root");
    const wrongRoot = await verify("--attestation", path, "--roots", otherRoots.rootsDir, "--release-keys", cluster.releaseKeysPath);
    expect(wrongRoot.code).toBe(1);
    expect(wrongRoot.stdout).toContain("FAIL  hardware: the attestation chain does not lead to a trusted root");
  });

  it("a record whose chain was withheld below hardware cannot be re-checked: exit 3", async () => {
    const result = await verify("--attestation", save(await record(agents.untrustedChain)), ...anchors());
    expect(result.code, result.stdout).toBe(3);
    expect(result.stdout).toContain("--    signature: not checked: it covers the certificate chain the provider presented");
    expect(lastLine(result.stdout)).toBe("NOT CHECKED: the record withholds the chain its signature covers, so its transparent rung cannot be re-checked");
  });

  describe("one changed byte is INVALID (exit 1), naming the check", () => {
    const flip = (hex: string, at: number) => hex.slice(0, at) + (hex[at] === "0" ? "1" : "0") + hex.slice(at + 1);

    it.each([
      ["the signature", (r: AttestationRecord) => void (r.evidence.signature = flip(r.evidence.signature, 10)), "FAIL  signature: the signature over the challenge does not verify"],
      ["the nonce", (r: AttestationRecord) => void (r.evidence.nonce = flip(r.evidence.nonce, 0)), "FAIL  signature: the signature over the challenge does not verify"],
      ["the sealing key", (r: AttestationRecord) => void (r.evidence.sealing_key = flip(r.evidence.sealing_key, 5)), "FAIL  signature:"],
      ["the provider id", (r: AttestationRecord) => void (r.provider_id = flip(r.provider_id, 63)), "FAIL  provider_id:"],
      ["the serial", (r: AttestationRecord) => void (r.serial = "C02TEST0002"), "FAIL  serial: the record says C02TEST0002, the leaf names C02TEST0001"],
      ["the release manifest", (r: AttestationRecord) => void (r.evidence.manifest!.created = "2000-01-01T00:00:00.000Z"), "FAIL  transparent: the release manifest's signature does not verify"],
    ])("%s", async (_, tamper, failure) => {
      const body = await record(agents.hardware);
      tamper(body);
      const result = await verify("--attestation", save(body), ...anchors());
      expect(result.code, result.stdout + result.stderr).toBe(1);
      expect(result.stdout).toContain(failure);
      expect(lastLine(result.stdout)).toMatch(/^INVALID: /);
    });

    it("a byte of the leaf certificate's PEM: the signature and the chain both fail", async () => {
      const body = await record(agents.hardware);
      const leaf = body.evidence.chain![0]!;
      // a character of the base64 body well inside the certificate's to-be-signed part
      const at = "-----BEGIN CERTIFICATE-----\n".length + 100;
      body.evidence.chain![0] = leaf.slice(0, at) + (leaf[at] === "A" ? "B" : "A") + leaf.slice(at + 1);
      const result = await verify("--attestation", save(body), ...anchors());
      expect(result.code, result.stdout + result.stderr).toBe(1);
      expect(result.stdout).toContain("FAIL  signature:");
      expect(result.stdout).toMatch(/FAIL {2}hardware: /);
    });

    it("a rung above what the evidence proves", async () => {
      const body = await record(agents.process);
      const result = await verify("--attestation", save({ ...body, rung: "transparent" }), ...anchors());
      expect([result.code, lastLine(result.stdout)]).toEqual([1, "INVALID: the record claims rung transparent but its evidence proves only process"]);
    });

    it("a serial below hardware breaks the serial rule", async () => {
      const body = await record(agents.process);
      const result = await verify("--attestation", save({ ...body, serial: "C02TEST0001" }));
      expect([result.code, lastLine(result.stdout)]).toEqual([1, "INVALID: serial: a serial is disclosed at the hardware rung only"]);
    });
  });

  it("usage: FILE or --attestation, not both; --roots only with --attestation (exit 64); an unreadable file is exit 3", async () => {
    const path = save(await record(agents.process));
    for (const args of [[path, "--attestation", path], [path, "--roots", cluster.ca.rootsDir], ["--attestation", path, "--key", "ab".repeat(32)]]) {
      const result = await verify(...args);
      expect([result.code, result.stderr.trim().split("\n")]).toEqual([64, [expect.stringMatching(/^svc-agent: .*; see --help$/)]]);
    }
    const missing = await verify("--attestation", join(dir, "missing.json"));
    expect([missing.code, missing.stderr]).toEqual([3, expect.stringContaining("svc-agent: cannot read")]);
  });
});

describe("the coordinator keeps the latest evidence per connected link", () => {
  const port = (): AgentPort => ({ send: () => undefined, close: () => undefined });
  const ID = "a".repeat(64);
  const rec = (nonce: string) => ({ nonce }) as Evidence;

  it("a re-attestation replaces it; a replaced link neither overwrites nor removes its successor's", () => {
    const store = new Attestations();
    const [old, fresh] = [port(), port()];
    store.granted(ID, rec("1"), old);
    store.reattested(ID, rec("2"), old);
    expect(store.get(ID)?.nonce).toBe("2");
    store.granted(ID, rec("3"), fresh);
    store.reattested(ID, rec("4"), old);
    store.closed(ID, old);
    expect(store.get(ID)?.nonce).toBe("3");
    store.closed(ID, fresh);
    expect(store.get(ID)).toBeUndefined();
  });
});
