// SPEC §4.1 routing, §2.4 busy/waiting and §8's one session per provider, end to end: a standalone coordinator,
// two gateways sharing it at different floors, and three agents (process, transparent, hardware).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type Cluster } from "../fixtures/cluster.ts";
import { get, listProviders, post, waitForProvider, type AgentProcess } from "../fixtures/gateway.ts";

let cluster: Cluster;
let open: { url: string; key: string };
let strict: { url: string; key: string };
const agents: Record<string, AgentProcess> = {};

beforeAll(async () => {
  // each token takes 20 ms, so sessions overlap the way concurrent requests on real machines do
  cluster = await startCluster({ agentArgs: ["--test-fault", "token-delay-ms=20"] });
  // the gateways and the agents each need only the coordinator: they start side by side
  const rungs = ["process", "transparent", "hardware"] as const;
  const [gateways, started] = await Promise.all([
    Promise.all([cluster.startGateway(), cluster.startGateway(["--trust-floor", "hardware"])]),
    Promise.all(rungs.map((rung) => cluster.startAgent(rung))),
  ]);
  [open, strict] = gateways;
  rungs.forEach((rung, i) => (agents[rung] = started[i]!));
  await Promise.all(started.map((agent) => waitForProvider(open, agent.providerId)));
}, 120_000);
afterAll(() => cluster.stop());

const messages = [{ role: "user", content: "hi" }];
const chat = (gateway: { url: string; key: string }, extra: Record<string, unknown> = {}, init: RequestInit = {}) =>
  post(gateway, "/v1/chat/completions", { messages, max_tokens: 8, ...extra }, init);

describe("§4.1 Routing", () => {
  it("with a pin, by whole id or by 8-character prefix, the call runs on that machine", async () => {
    // one machine's two pins in turn, the three machines side by side
    await Promise.all(
      Object.values(agents).map(async (agent) => {
        for (const pin of [{ provider: agent.providerId }, { provider_key_id: agent.providerId.slice(0, 8) }]) {
          const res = await chat(open, pin);
          expect(res.status).toBe(200);
          expect(res.headers.get("x-svc-provider")).toBe(agent.providerId);
        }
      }),
    );
  });

  it("without a pin, N idle providers given N concurrent requests take one each", async () => {
    const responses = await Promise.all([0, 1, 2].map(() => chat(open)));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(new Set(responses.map((r) => r.headers.get("x-svc-provider")))).toEqual(new Set(Object.values(agents).map((a) => a.providerId)));
  });

  it("a prefix shorter than 8 characters → 400 fix_request", async () => {
    const res = await chat(open, { provider: agents.process!.providerId.slice(0, 7) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { svc_action: string; param: string } }).error).toMatchObject({ svc_action: "fix_request", param: "provider" });
  });

  it("no provider for the alias at all → 503 provider_unavailable, wait", async () => {
    const res = await chat(open, { model: "qwen3-8b" });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("5");
    expect(((await res.json()) as { error: unknown }).error).toMatchObject({ code: "provider_unavailable", svc_action: "wait" });
  });

  it("a pin to a machine that is not online → 503 provider_unavailable", async () => {
    const res = await chat(open, { provider: "f".repeat(64) });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("5");
    expect(((await res.json()) as { error: unknown }).error).toMatchObject({ code: "provider_unavailable" });
  });

  it("affinity: with idle providers, a caller's next turn lands where its last one ran; a busy affine provider does not hold it up", async () => {
    const idle = (r: { busy: boolean; waiting: number } | undefined) => r?.busy === false && r.waiting === 0;
    const allIdle = () => Promise.all(Object.values(agents).map((a) => waitForProvider(open, a.providerId, idle)));
    await allIdle();
    const first = (await chat(open)).headers.get("x-svc-provider")!;
    // least-recently-used alone would send each of these turns to another of the three idle providers
    for (let turn = 2; turn <= 3; turn++) {
      await allIdle();
      const res = await chat(open);
      expect([res.status, res.headers.get("x-svc-provider")]).toEqual([200, first]);
    }
    // held by a pinned 300-token answer (about 6 s at 20 ms a token): the next turn goes elsewhere at once
    let held = false;
    const holding = chat(open, { provider: first, max_tokens: 300 }).then(async (res) => {
      await res.json();
      held = true;
      return res.status;
    });
    await waitForProvider(open, first, (r) => r?.busy === true);
    const res = await chat(open);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-svc-provider")).not.toBe(first);
    expect(held).toBe(false);
    expect(await holding).toBe(200);
  });
});

describe("§2.4 Trust floor, with two gateways sharing one coordinator", () => {
  it("a hardware-floor gateway lists only the hardware provider; the process-floor one lists all three", async () => {
    expect((await listProviders(strict)).map((p) => p.id)).toEqual([agents.hardware!.providerId]);
    expect((await listProviders(open)).map((p) => p.id).sort()).toEqual(Object.values(agents).map((a) => a.providerId).sort());
  });

  it("below the floor: never used without a pin, and a pin to one → 503 provider_unavailable", async () => {
    for (let i = 0; i < 3; i++) {
      const res = await chat(strict);
      expect(res.headers.get("x-svc-provider")).toBe(agents.hardware!.providerId);
    }
    for (const agent of [agents.process!, agents.transparent!]) {
      const res = await chat(strict, { provider: agent.providerId });
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: { code: string; message: string } }).error).toMatchObject({
        code: "provider_unavailable",
        message: expect.stringContaining("below this gateway's trust floor (hardware)"),
      });
    }
  });
});

describe("§8 One session at a time per provider, FIFO queue", () => {
  it("busy and waiting are exact while a queue fills and drains, across gateways, in arrival order", async () => {
    const id = agents.hardware!.providerId;
    const finished: string[] = [];
    const run = (name: string, gateway: { url: string; key: string }) =>
      chat(gateway, { provider: id, max_tokens: 15 }).then(async (res) => {
        expect(res.status).toBe(200);
        await res.json();
        finished.push(name);
      });
    const first = run("first", open);
    await waitForProvider(open, id, (r) => r?.busy === true && r.waiting === 0);
    const second = run("second", open);
    await waitForProvider(open, id, (r) => r?.busy === true && r.waiting === 1);
    const third = run("third", strict);
    // observed exactly (a second read could already see the first session done on a slow machine)
    await waitForProvider(open, id, (r) => r?.busy === true && r.waiting === 2);
    await Promise.all([first, second, third]);
    expect(finished).toEqual(["first", "second", "third"]);
    // the answers end before the agent's idle word reaches the directory: it follows, without a session between
    await waitForProvider(open, id, (r) => r?.busy === false && r.waiting === 0);
  });

  it("a caller who hangs up while queued leaves the queue at once", async () => {
    const id = agents.process!.providerId;
    const running = chat(open, { provider: id, max_tokens: 30 });
    await waitForProvider(open, id, (r) => r?.busy === true);
    const hangUp = new AbortController();
    const queued = chat(open, { provider: id, stream: true }, { signal: hangUp.signal });
    await waitForProvider(open, id, (r) => r?.waiting === 1);
    await (await queued).body?.getReader().read(); // the head and role chunk arrive while it waits
    hangUp.abort();
    await waitForProvider(open, id, (r) => r?.busy === true && r.waiting === 0, 2_000);
    expect((await running).status).toBe(200);
  });
});

describe("Lazy loading", () => {
  it("an agent advertises without loading; the first session loads the model", async () => {
    const fresh = await cluster.startAgent("process");
    await waitForProvider(open, fresh.providerId);
    expect(fresh.stdout()).not.toMatch(/loaded qwen3-4b/);
    const res = await chat(open, { provider: fresh.providerId });
    expect(res.status).toBe(200);
    expect(fresh.stdout()).toMatch(/session \S+ start \(qwen3-4b\)\n.*loaded qwen3-4b/);
    await fresh.stop();
  });
});
