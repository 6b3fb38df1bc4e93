// DESIGN §4 end to end: agents at each rung against a standalone coordinator with a trusted release key and a
// throwaway attestation CA; every forgery refused with a reason both sides log; keys kept across restarts.
import { execFileSync } from "node:child_process";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { signEvidence } from "../../src/trust/attestation.ts";
import { measure } from "../../src/trust/measure.ts";
import { providerIdOf } from "../../src/receipt/provider-id.ts";
import { sealingKeyPair } from "../../src/crypto/seal.ts";
import { Signer } from "../../src/crypto/signing.ts";
import { AGENT_PATH } from "../../src/wire/agent.ts";
import { wsUrl } from "../../src/link/ws-url.ts";
import { startCluster, type Cluster } from "../fixtures/cluster.ts";
import { enrollAt, tokenFor } from "../fixtures/enroll.ts";
import { listProviders, startAgent, waitForProvider, type AgentProcess } from "../fixtures/gateway.ts";
import { AGENT_BIN, GATEWAY_BIN, startProcess } from "../../harness/process.ts";
import { waitForReady } from "../../harness/ready.ts";
import { makeTestCa } from "../fixtures/test-ca.ts";

let cluster: Cluster;
let gateway: { url: string; key: string };
const agents: Record<string, AgentProcess> = {};

beforeAll(async () => {
  cluster = await startCluster();
  // the gateway and the three agents need only the coordinator: start them side by side
  const rungs = ["process", "transparent", "hardware"] as const;
  const [started] = await Promise.all([
    Promise.all(rungs.map((rung) => cluster.startAgent(rung, { args: ["--name", `${rung}-box`] }))),
    cluster.startGateway().then((g) => (gateway = g)),
  ]);
  rungs.forEach((rung, i) => (agents[rung] = started[i]!));
  for (const agent of Object.values(agents)) await waitForProvider(gateway, agent.providerId);
}, 120_000);
afterAll(() => cluster.stop());

const providers = () => listProviders(gateway);

describe("DESIGN §4 Trust rungs: each rung granted", () => {
  it("process, transparent and hardware agents are listed at their rung; only hardware discloses its serial", async () => {
    const listed = await providers();
    const byId = (id: string) => listed.find((p) => p.id === id);
    expect(byId(agents.process!.providerId)).toEqual({ id: agents.process!.providerId, model_ids: ["qwen3-4b"], trust: "process", busy: false, waiting: 0, evidence_sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(byId(agents.transparent!.providerId)).toMatchObject({ trust: "transparent" });
    expect(byId(agents.transparent!.providerId)).not.toHaveProperty("serial");
    expect(byId(agents.hardware!.providerId)).toMatchObject({ trust: "hardware", serial: "C02TEST0001" });
  });

  it("each agent logs one line per state change: connected, granted rung, advertising", () => {
    const out = agents.hardware!.stdout();
    expect(out).toMatch(/svc-agent \[hardware-box\]: connected to http/);
    expect(out).toMatch(/svc-agent \[hardware-box\]: granted rung hardware \(serial C02TEST0001\) as provider [0-9a-f]{64}/);
    expect(out).toMatch(/svc-agent \[hardware-box\]: advertising \[qwen3-4b\]/);
  });

  it("the provider id is the SHA-256 of the Ed25519 key kept 0600 under the data dir, and survives a restart", async () => {
    const keyFile = join(agents.process!.dataDir, "agent-keys.json");
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const seeds = JSON.parse(readFileSync(keyFile, "utf8")) as { signing_seed: string };
    expect(providerIdOf(Signer.fromSeed(Buffer.from(seeds.signing_seed, "hex")).publicKey)).toBe(agents.process!.providerId);
    // one agent per data dir: the first must be gone before the restart takes its keys
    await agents.process!.stop();
    const again = await startAgent(cluster.coordinator.url, cluster.tiny, { dataDir: agents.process!.dataDir, until: /granted rung/ });
    expect(again.providerId).toBe(agents.process!.providerId);
    expect(again.stdout()).toContain("loaded keys");
    await again.stop();
  });

  it("`svc-agent measure` prints the measurement that `svc-gateway release sign` lists by default", () => {
    const dir = cluster.tiny.dir;
    const printed = execFileSync(process.execPath, [AGENT_BIN, "measure"]).toString().trim();
    expect(printed).toBe(measure());
    const pub = execFileSync(process.execPath, [GATEWAY_BIN, "release", "keygen", "--out", join(dir, "rk.pem")]).toString().trim();
    expect(statSync(join(dir, "rk.pem")).mode & 0o777).toBe(0o600);
    execFileSync(process.execPath, [GATEWAY_BIN, "release", "sign", "--key", join(dir, "rk.pem"), "--out", join(dir, "m.json")]);
    const manifest = JSON.parse(readFileSync(join(dir, "m.json"), "utf8")) as { measurements: string[]; release_key: string };
    expect(manifest).toMatchObject({ measurements: [printed], release_key: pub });
  });
});

describe("DESIGN §4 Trust rungs: forgeries refused with a logged reason", () => {
  async function refusedAgent(args: string[], rung: string, why: RegExp) {
    const agent = await cluster.startAgent("process", { args, until: /granted rung/ });
    await agent.waitFor(new RegExp(`granted rung ${rung}`));
    await agent.waitFor(why);
    await cluster.coordinator.waitForLog((l) => l.msg === "agent granted" && l.provider === agent.providerId && JSON.stringify(l.refusals).match(why) !== null);
    // the gateway's listing comes from its copy of the directory, which the coordinator feeds a turn after its log
    await expect.poll(async () => (await providers()).find((p) => p.id === agent.providerId)?.trust).toBe(rung);
    await agent.stop();
  }
  const hardware = (attestor: string) => ["--release-manifest", cluster.manifestPath, "--attestor", attestor];

  it("a chain to the wrong root earns transparent, not hardware", async () => {
    const other = await makeTestCa(join(cluster.tiny.dir, "other-ca"), "Other Root");
    await refusedAgent(hardware(other.attestor()), "transparent", /hardware refused: the attestation chain does not lead to a trusted root/);
  });

  it("a leaf that does not bind the agent's keys earns transparent, not hardware", async () => {
    await refusedAgent(hardware(cluster.ca.attestor("unbound")), "transparent", /hardware refused: the leaf certificate does not bind this agent's keys/);
  });

  it("an expired chain earns transparent, not hardware", async () => {
    await refusedAgent(hardware(cluster.ca.attestor("expired")), "transparent", /hardware refused: certificate CN=Test Device is not valid now/);
  });

  it("a tampered manifest earns process, not transparent", async () => {
    const manifest = JSON.parse(readFileSync(cluster.manifestPath, "utf8")) as { measurements: string[] };
    manifest.measurements.push("ee".repeat(32));
    const tampered = join(cluster.tiny.dir, "tampered-manifest.json");
    writeFileSync(tampered, JSON.stringify(manifest));
    await refusedAgent(["--release-manifest", tampered], "process", /transparent refused: the release manifest's signature does not verify \(tampered manifest\)/);
  });

  it("a replayed nonce is refused outright and the link closed", async () => {
    const signer = Signer.fromSeed(Buffer.alloc(32, 9));
    const sealing = await sealingKeyPair(Buffer.alloc(32, 10));
    const firstChallenge = async () => {
      const ws = new WebSocket(wsUrl(cluster.coordinator.url, AGENT_PATH), { headers: { authorization: `Bearer ${await tokenFor(cluster.coordinator.url)}` } });
      const challenge = await new Promise<{ nonce: string }>((resolve) => ws.once("message", (d) => resolve(JSON.parse(String(d)) as { nonce: string })));
      return { ws, nonce: challenge.nonce };
    };
    const first = await firstChallenge();
    const evidence = signEvidence(signer, { nonce: first.nonce, signing_key: signer.publicKey, sealing_key: sealing.publicKey });
    first.ws.send(JSON.stringify({ t: "evidence", evidence }));
    expect(JSON.parse(String(await new Promise((resolve) => first.ws.once("message", resolve))))).toMatchObject({ t: "granted", rung: "process" });
    first.ws.close();
    // the same signed evidence, sent on a new connection that was challenged with a new nonce
    const second = await firstChallenge();
    const closed = new Promise<number>((resolve) => second.ws.once("close", resolve));
    second.ws.send(JSON.stringify({ t: "evidence", evidence }));
    expect(JSON.parse(String(await new Promise((resolve) => second.ws.once("message", resolve))))).toEqual({
      t: "refused",
      reason: expect.stringContaining("replayed or stale nonce"),
    });
    expect(await closed).toBe(4003);
    await cluster.coordinator.waitForLog((l) => l.msg === "agent refused" && String(l.reason).includes("replayed or stale nonce"));
  });

  it("a fresh nonce is asked again every few minutes, and the agent answers each", async () => {
    // a coordinator that re-challenges every 300 ms instead of every 5 minutes
    const dataDir = join(cluster.tiny.dir, "rechallenging");
    const proc = startProcess(GATEWAY_BIN, ["coordinator", "--port", "0", "--catalog", cluster.tiny.catalogPath, "--data-dir", dataDir, "--rechallenge-ms", "300"]);
    try {
      const coordinatorUrl = (await waitForReady(proc, "svc-gateway coordinator")).coordinator;
      enrollAt(coordinatorUrl, dataDir);
      const agent = await startAgent(coordinatorUrl, cluster.tiny);
      const reattested = () => proc.logs().filter((l) => l.msg === "agent re-attested" && l.provider === agent.providerId).length;
      await proc.waitForLog(() => reattested() >= 3);
      expect(agent.stdout()).not.toContain("disconnected");
      await agent.stop();
    } finally {
      await proc.stop();
    }
  });
});
