// Reliability, faults: graceful shutdown of gateway and agent, an agent that stalls (SIGSTOP, as a network
// stall or a vanished machine looks from outside) mid-stream or idle, 1,000 concurrent streams through one
// gateway, and agent connect/disconnect storms. Afterwards every provider is free, every request ended within a
// bound, and nothing leaked. The production heartbeat is in force: no fixture shortens it.
import { readdirSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deadPeerBoundMs, DEFAULT_HEARTBEAT_MS, idlePeerBoundMs } from "../../src/link/heartbeat.ts";
import { listProviders, post, startGateway, waitForProvider, type GatewayProcess } from "../fixtures/gateway.ts";
import { followSse, readSse } from "../../harness/sse.ts";
import { startSwarm } from "../../harness/swarm.ts";
import { makeTinyCatalog, type TinyCatalog } from "../fixtures/tiny-catalog.ts";

const synthetic = (tokens: number, ms: number) => ["--engine", "synthetic", "--synthetic-tokens", String(tokens), "--synthetic-token-ms", String(ms)];
const messages = [{ role: "user", content: "hi" }];
const chat = (gw: GatewayProcess, extra: Record<string, unknown> = {}) => post(gw, "/v1/chat/completions", { messages, max_tokens: 100, ...extra });

const errorCode = (data: string[]) => (JSON.parse(data.at(-1)!) as { error?: { code: string } }).error?.code;

/** Starts a stream and waits for its first token; `done` settles with the stream's data when it ends. */
async function streamStarted(gw: GatewayProcess, extra: Record<string, unknown>): Promise<{ done: Promise<string[]> }> {
  const { firstContent, done } = followSse(chat(gw, { stream: true, ...extra }));
  await firstContent;
  return { done: done.then((stream) => stream.data) }; // wrapped: an async function returning the promise itself would wait for the whole stream
}

/** The fault tests' gateways, one each (each test stops or stalls its own): all started, side by side, before the first test. */
const faultGateways = {
  grace: () => startGateway({ agentArgs: synthetic(10, 100), args: ["--shutdown-grace-ms", "10000"] }),
  deadline: () => startGateway({ agentArgs: synthetic(50, 100), args: ["--shutdown-grace-ms", "300"] }),
  // answers of 4 s: both agents stay busy well past the moment the third request is routed and seen queued
  handover: () => startGateway({ agents: 2, agentArgs: synthetic(40, 100) }),
  stall: () => startGateway({ agentArgs: synthetic(100, 50) }),
  idle: () => startGateway({ agents: 2, agentArgs: synthetic(3, 0) }),
};
const started: Partial<Record<keyof typeof faultGateways, GatewayProcess>> = {};
const prestarted = (name: keyof typeof faultGateways): GatewayProcess => started[name]!;

beforeAll(async () => {
  const names = Object.keys(faultGateways) as (keyof typeof faultGateways)[];
  const results = await Promise.allSettled(names.map((name) => faultGateways[name]()));
  results.forEach((r, i) => r.status === "fulfilled" && (started[names[i]!] = r.value));
  const failed = results.find((r) => r.status === "rejected");
  if (failed) throw failed.reason;
}, 120_000);
// each test stops its own when it is done; this is for a start that failed half way, or a test that did
afterAll(() => Promise.all(Object.values(started).map((gw) => gw.stop())));

describe("Reliability: graceful shutdown of the gateway (SIGTERM)", () => {
  it("stops accepting at once and lets a stream in flight finish within the grace period", async () => {
    const gw = prestarted("grace");
    try {
      const { done: stream } = await streamStarted(gw, {});
      gw.child.kill("SIGTERM");
      await gw.waitFor(/shutting down/);
      await expect(fetch(`${gw.url}/healthz`)).rejects.toThrow();
      const data = await stream;
      expect(data.at(-1)).toBe("[DONE]");
      await gw.waitFor(/svc-gateway: stopped/);
    } finally {
      await gw.stop();
    }
  }, 60_000);

  it("past the deadline, a stream ends with the SPEC §3 mid-stream error (shutting_down) and no [DONE]", async () => {
    const gw = prestarted("deadline");
    try {
      const { done: stream } = await streamStarted(gw, {});
      const whole = chat(gw, {}); // queued behind the stream on the only provider
      await waitForProvider(gw, gw.providerId, (r) => r?.waiting === 1);
      gw.child.kill("SIGTERM");
      const data = await stream;
      expect(data).not.toContain("[DONE]");
      expect(errorCode(data)).toBe("shutting_down");
      const res = await whole;
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: { code: string; svc_action: string } }).error).toMatchObject({ code: "shutting_down", svc_action: "retry" });
      await gw.waitFor(/svc-gateway: stopped/);
    } finally {
      await gw.stop();
    }
  }, 60_000);
});

describe("Reliability: graceful shutdown of an agent (SIGTERM)", () => {
  it("finishes its session, hands its queue to another provider, leaves the directory and exits 0", async () => {
    const gw = prestarted("handover");
    try {
      const [leaving, staying] = gw.agents;
      const { done: stream } = await streamStarted(gw, { provider: leaving!.providerId });
      const busyOther = chat(gw, { provider: staying!.providerId, max_tokens: 30 });
      await waitForProvider(gw, staying!.providerId, (r) => r?.busy === true);
      // unpinned, with both busy: it lines up behind the one given work least recently, the leaving one
      const queued = chat(gw, { max_tokens: 3 });
      await waitForProvider(gw, leaving!.providerId, (r) => r?.busy === true && r.waiting === 1);
      leaving!.child.kill("SIGTERM");
      const data = await stream;
      expect(data.at(-1)).toBe("[DONE]");
      const handedOver = await queued;
      expect(handedOver.status).toBe(200);
      expect(handedOver.headers.get("x-svc-provider")).toBe(staying!.providerId);
      expect((await busyOther).status).toBe(200);
      await leaving!.exited; // its promise from the start: an exit before this line is not missed
      expect(leaving!.child.exitCode).toBe(0);
      expect(leaving!.stdout()).toContain("stopped");
      await waitForProvider(gw, leaving!.providerId, (r) => r === undefined);
      await waitForProvider(gw, staying!.providerId, (r) => r?.busy === false && r.waiting === 0);
    } finally {
      await gw.stop();
    }
  }, 60_000);
});

describe("Reliability: an agent that stalls mid-stream (SIGSTOP)", () => {
  it("the stream ends with provider_error within the heartbeat bound; the agent returns after SIGCONT", async () => {
    const gw = prestarted("stall");
    try {
      const agent = gw.agents[0]!;
      const started = Date.now();
      const { done: stream } = await streamStarted(gw, {});
      agent.child.kill("SIGSTOP");
      const data = await stream;
      expect(errorCode(data)).toBe("provider_error");
      expect(Date.now() - started).toBeLessThan(10_000);
      await waitForProvider(gw, agent.providerId, (r) => r === undefined);
      agent.child.kill("SIGCONT");
      // listed again at its grant, routable once it advertises its models (after the aborted session unwinds)
      await waitForProvider(gw, agent.providerId, (r) => r !== undefined && r.model_ids.length > 0 && !r.busy && r.waiting === 0);
      const after = await chat(gw, { max_tokens: 3 });
      expect(after.status, await after.clone().text()).toBe(200);
    } finally {
      await gw.stop();
    }
  }, 60_000);
});

describe("Reliability: an idle agent that vanishes (SIGSTOP)", () => {
  /** Room for a loaded box: the listing's poll, a timer or two late. */
  const SLACK_MS = 4_000;

  it(`leaves the listing within the idle bound (${idlePeerBoundMs(DEFAULT_HEARTBEAT_MS)} ms); a request routed to one meanwhile goes to another within the busy bound`, async () => {
    const gw = prestarted("idle");
    const [vanishing, staying] = [gw.agents[0]!, gw.agents[1]!];
    const listed = async () => (await listProviders(gw)).some((p) => p.id === vanishing.providerId);
    try {
      // its last word just now (an idle agent's beats come up to 5.4 s apart): its silence is timed from here
      expect((await chat(gw, { provider: vanishing.providerId, max_tokens: 3 })).status).toBe(200);
      vanishing.child.kill("SIGSTOP");
      let stopped = Date.now();
      await expect.poll(listed, { timeout: idlePeerBoundMs(DEFAULT_HEARTBEAT_MS) + SLACK_MS, interval: 250 }).toBe(false);
      // judged at the idle allowance: a busy one would have dropped it within the busy bound
      expect(Date.now() - stopped).toBeGreaterThan(deadPeerBoundMs(DEFAULT_HEARTBEAT_MS));
      vanishing.child.kill("SIGCONT");
      await waitForProvider(gw, vanishing.providerId);

      // the staying agent is given work last, so the next unpinned request goes to the other, least recently used
      expect((await chat(gw, { provider: staying.providerId, max_tokens: 3 })).status).toBe(200);
      vanishing.child.kill("SIGSTOP");
      stopped = Date.now();
      const res = await chat(gw, { max_tokens: 3 });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-svc-provider")).toBe(staying.providerId);
      expect(Date.now() - stopped).toBeLessThan(deadPeerBoundMs(DEFAULT_HEARTBEAT_MS) + SLACK_MS);
      expect(await listed()).toBe(false);
    } finally {
      vanishing.child.kill("SIGCONT");
      await gw.stop();
    }
  }, 90_000);
});

describe("Reliability: load and storms through one gateway", () => {
  let tiny: TinyCatalog;
  let gw: GatewayProcess;
  const openFds = () => readdirSync(`/proc/${gw.child.pid}/fd`).length;
  const listed = () => listProviders(gw);

  beforeAll(async () => {
    tiny = makeTinyCatalog();
    // the swarm's agents present no token: this test is about load, enrollment has its own
    gw = await startGateway({ tiny, agents: 0, args: ["--open-enrollment", "--max-queue-per-provider", "1000"] });
  }, 60_000);
  afterAll(async () => {
    await gw.stop();
    tiny.cleanup();
  });

  it("1,000 concurrent streams all end with [DONE]; afterwards every provider is free", async () => {
    const swarm = await startSwarm(gw.coordinatorUrl, tiny.catalogPath, 25, 3, 0);
    try {
      await expect.poll(async () => (await listed()).length, { timeout: 20_000 }).toBe(25);
      const results = await Promise.all(
        Array.from({ length: 1000 }, () =>
          chat(gw, { stream: true, max_tokens: 3 }).then(async (res) => (await readSse(res)).data),
        ),
      );
      expect(results.filter((d) => d.at(-1) === "[DONE]").length).toBe(1000);
      await expect.poll(async () => (await listed()).every((p) => !p.busy && p.waiting === 0), { timeout: 10_000 }).toBe(true);
    } finally {
      await swarm.stop();
    }
  }, 120_000);

  it("connect/disconnect storms leave the directory exact, and no file descriptors or listeners behind", async () => {
    await expect.poll(async () => (await listed()).length, { timeout: 20_000 }).toBe(0);
    const baseline = openFds();
    // two storms: the second starts where the first left the directory, and ends as exact
    for (let round = 0; round < 2; round++) {
      const swarm = await startSwarm(gw.coordinatorUrl, tiny.catalogPath, 100);
      await expect.poll(async () => (await listed()).length, { timeout: 20_000 }).toBe(100);
      await swarm.kill("SIGKILL");
      await expect.poll(async () => (await listed()).length, { timeout: 20_000 }).toBe(0);
    }
    // the embedded coordinator's links are gone with them: the agents' sockets were closed, not kept
    expect(openFds()).toBeLessThan(baseline + 10);
    expect(gw.stderr()).not.toMatch(/MaxListenersExceeded|leak/i);
    const metrics = await (await fetch(`${gw.coordinatorUrl}/metrics`)).text();
    expect(metrics).toMatch(/^svc_coordinator_links\{kind="agent"\} 0$/m);
  }, 120_000);
});
