// The ready line (docs/operator-guide.md "The ready line"): what scripts may rely on, byte for byte. Each
// long-running command prints exactly one JSON line with `ready` on stdout, after its banner, once it is up; an
// agent the coordinator refuses never prints one.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_BIN, GATEWAY_BIN, startProcess, type Proc } from "../../harness/process.ts";
import { waitForReady } from "../../harness/ready.ts";
import { enrollProvider } from "../fixtures/enroll.ts";
import { makeTinyCatalog, type TinyCatalog } from "../fixtures/tiny-catalog.ts";

let tiny: TinyCatalog;
let coordinator: Proc;
let coordinatorUrl: string;
let token: string;

/** The lines of stdout that carry `ready`. */
const readyLines = (proc: Proc) => proc.stdout().split("\n").filter((line) => line.includes('"ready"'));

const agentArgs = (name: string) => ["start", "--coordinator", coordinatorUrl, "--catalog", tiny.catalogPath, "--models-dir", tiny.modelsDir,
  "--data-dir", join(tiny.dir, name), "--engine", "synthetic"];

beforeAll(async () => {
  tiny = makeTinyCatalog([{ alias: "qwen3-4b", seed: 1 }]);
  const dataDir = join(tiny.dir, "coordinator");
  token = await enrollProvider(dataDir);
  coordinator = startProcess(GATEWAY_BIN, ["coordinator", "--port", "0", "--catalog", tiny.catalogPath, "--data-dir", dataDir]);
  coordinatorUrl = (await waitForReady(coordinator, "svc-gateway coordinator")).coordinator;
});

afterAll(async () => {
  await coordinator?.stop();
  tiny?.cleanup();
});

describe("The ready line", () => {
  it("svc-gateway coordinator: its address, after the banner", () => {
    const [line] = readyLines(coordinator);
    expect(readyLines(coordinator)).toEqual([expect.stringMatching(/^\{"ready":"svc-gateway coordinator","coordinator":"http:\/\/127\.0\.0\.1:\d+"\}$/)]);
    expect(line).toBe(`{"ready":"svc-gateway coordinator","coordinator":"${coordinatorUrl}"}`);
    expect(coordinator.stdout().indexOf(`svc-gateway: coordinator at ${coordinatorUrl}`)).toBeLessThan(coordinator.stdout().indexOf(line!));
  });

  it("svc-gateway serve: the gateway's origin and its coordinator's", async () => {
    const secretFile = join(tiny.dir, "coordinator", "gateway-secret"); // the coordinator made it, given no secret
    const gateway = startProcess(GATEWAY_BIN, ["serve", "--port", "0", "--coordinator", coordinatorUrl, "--catalog", tiny.catalogPath, "--data-dir", join(tiny.dir, "gateway"), "--gateway-secret-file", secretFile]);
    try {
      const ready = await waitForReady(gateway, "svc-gateway serve");
      expect(readyLines(gateway)).toEqual([`{"ready":"svc-gateway serve","gateway":"${ready.gateway}","coordinator":"${coordinatorUrl}"}`]);
      expect(ready.gateway).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(gateway.stdout()).toContain(`svc-gateway: OpenAI routes at ${ready.gateway}/v1`);
      expect((await fetch(`${ready.gateway}/healthz`)).status).toBe(200);
    } finally {
      await gateway.stop();
    }
  });

  it("svc-agent start: once admitted, its provider id, rung, aliases and coordinator, once", async () => {
    const agent = startProcess(AGENT_BIN, agentArgs("agent"), { env: { SVC_PROVIDER_TOKEN: token } });
    try {
      const ready = await waitForReady(agent, "svc-agent start");
      expect(readyLines(agent)).toEqual([`{"ready":"svc-agent start","provider":"${ready.provider}","rung":"process","aliases":["qwen3-4b"],"coordinator":"${coordinatorUrl}"}`]);
      expect(agent.stdout()).toContain(`svc-agent: granted rung process as provider ${ready.provider}`);
    } finally {
      await agent.stop();
    }
  });

  it("svc-agent start: a refused agent prints none", async () => {
    const agent = startProcess(AGENT_BIN, agentArgs("refused"));
    try {
      await agent.waitFor(/disconnected: refused: .*; reconnecting/);
      expect(readyLines(agent)).toEqual([]);
    } finally {
      await agent.stop();
    }
  });
});
