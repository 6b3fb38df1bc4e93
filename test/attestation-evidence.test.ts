// Public attestation evidence end to end: a standalone coordinator with a trusted release key and a throwaway
// CA, a gateway, agents at each rung: `GET /v1/providers/{id}/attestation` shows what the coordinator
// verified, under the listing's key and floor rules, and no serial below hardware.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AttestationRecord } from "../src/attestation-record.ts";
import { Attestations } from "../gateway/coordinator/attestations.ts";
import type { AgentPort } from "../gateway/coordinator/registry.ts";
import { startCluster, type Cluster } from "./fixtures/cluster.ts";
import { get, waitForProvider, type AgentProcess } from "./fixtures/gateway.ts";
import { makeTestCa } from "./fixtures/test-ca.ts";

let cluster: Cluster;
let gateway: { url: string; key: string };
const agents: Record<"process" | "transparent" | "hardware" | "untrustedChain", AgentProcess> = {} as never;

beforeAll(async () => {
  cluster = await startCluster();
  gateway = await cluster.startGateway();
  for (const rung of ["process", "transparent", "hardware"] as const) agents[rung] = await cluster.startAgent(rung);
  // a chain to a root the coordinator does not trust: transparent, and its chain (with the serial) withheld
  const other = await makeTestCa(join(cluster.tiny.dir, "other-ca"), "Other Root");
  agents.untrustedChain = await cluster.startAgent("process", { args: ["--release-manifest", cluster.manifestPath, "--attestor", other.attestor()] });
  for (const agent of Object.values(agents)) await waitForProvider(gateway, agent.providerId);
}, 120_000);
afterAll(() => cluster.stop());

const attestation = (id: string, key = gateway.key) => get({ url: gateway.url, key }, `/v1/providers/${id}/attestation`);

async function record(agent: AgentProcess): Promise<AttestationRecord> {
  const res = await attestation(agent.providerId);
  expect(res.status).toBe(200);
  return (await res.json()) as AttestationRecord;
}

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

  it("a provider below the gateway's floor is not found, as it is not listed", async () => {
    const high = await cluster.startGateway(["--trust-floor", "hardware"]);
    expect((await get(high, `/v1/providers/${agents.process.providerId}/attestation`)).status).toBe(404);
    expect((await get(high, `/v1/providers/${agents.hardware.providerId}/attestation`)).status).toBe(200);
  });
});

describe("the coordinator keeps the latest evidence per connected link", () => {
  const port = (): AgentPort => ({ send: () => undefined, close: () => undefined });
  const rec = (verified_at: string) => ({ provider_id: "a".repeat(64), verified_at }) as AttestationRecord;

  it("a re-attestation replaces it; a replaced link neither overwrites nor removes its successor's", () => {
    const store = new Attestations();
    const [old, fresh] = [port(), port()];
    store.granted(rec("1"), old);
    store.reattested(rec("2"), old);
    expect(store.get("a".repeat(64))?.verified_at).toBe("2");
    store.granted(rec("3"), fresh);
    store.reattested(rec("4"), old);
    store.closed("a".repeat(64), old);
    expect(store.get("a".repeat(64))?.verified_at).toBe("3");
    store.closed("a".repeat(64), fresh);
    expect(store.get("a".repeat(64))).toBeUndefined();
  });
});
