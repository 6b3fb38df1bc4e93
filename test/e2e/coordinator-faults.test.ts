// Faults end to end: an agent killed mid-stream (SIGKILL), a coordinator that goes down and comes back, and a
// bad agent sending garbage and oversized frames. Real processes on loopback, standalone coordinator.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { AGENT_PATH } from "../../src/wire/agent.ts";
import { wsUrl } from "../../src/link/ws-url.ts";
import { startCluster, type Cluster } from "../fixtures/cluster.ts";
import { get, listProviders, post, waitForProvider, type AgentProcess } from "../fixtures/gateway.ts";
import { followSse } from "../../harness/sse.ts";

let cluster: Cluster;
let gateway: { url: string; key: string };

beforeAll(async () => {
  cluster = await startCluster({ agentArgs: ["--test-fault", "token-delay-ms=40"] });
  gateway = await cluster.startGateway();
}, 60_000);
afterAll(() => cluster.stop());

const messages = [{ role: "user", content: "hi" }];
const chat = (extra: Record<string, unknown> = {}) => post(gateway, "/v1/chat/completions", { messages, max_tokens: 8, ...extra });
const errorOf = async (res: Response) => ((await res.json()) as { error: Record<string, unknown> }).error;
const listed = async () => (await listProviders(gateway)).map((p) => p.id);

/** `n` agents, started side by side, once the gateway lists each. */
async function agents(n: number): Promise<AgentProcess[]> {
  const started = await Promise.all(Array.from({ length: n }, () => cluster.startAgent("process")));
  for (const agent of started) await waitForProvider(gateway, agent.providerId);
  return started;
}

describe("Faults: an agent killed mid-stream", () => {
  it("the stream ends with the SPEC §3 mid-stream error; its queue is re-routed if unpinned, 503 if pinned; it leaves the listing", async () => {
    const [victim, survivor] = await agents(2);
    // the victim runs a long pinned stream; the survivor is kept busy so the unpinned caller queues on the victim
    const stream = followSse(chat({ provider: victim!.providerId, stream: true, max_tokens: 200 }));
    await stream.firstContent;
    const busySurvivor = chat({ provider: survivor!.providerId, max_tokens: 60 });
    await waitForProvider(gateway, survivor!.providerId, (r) => r?.busy === true);
    const unpinned = chat({ max_tokens: 4 });
    await waitForProvider(gateway, victim!.providerId, (r) => r?.waiting === 1);
    const pinned = chat({ provider: victim!.providerId, max_tokens: 4 });
    await waitForProvider(gateway, victim!.providerId, (r) => r?.waiting === 2);

    await victim!.kill("SIGKILL");
    const events = (await stream.done).data;
    expect(events).not.toContain("[DONE]");
    const last = JSON.parse(events.at(-1)!) as { error?: Record<string, unknown>; svc_receipt?: unknown };
    expect(last.error).toMatchObject({ code: "provider_error", svc_action: "retry", message: expect.stringContaining("went offline mid-session") });
    expect(events.some((e) => e.includes("svc_receipt"))).toBe(false);

    const rerouted = await unpinned;
    expect(rerouted.status).toBe(200);
    expect(rerouted.headers.get("x-svc-provider")).toBe(survivor!.providerId);
    const refused = await pinned;
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("5");
    expect(await errorOf(refused)).toMatchObject({ code: "provider_unavailable" });
    expect((await busySurvivor).status).toBe(200);
    expect(await listed()).not.toContain(victim!.providerId);
    await survivor!.stop();
  });
});

describe("Faults: a bad agent", () => {
  it("garbage and oversized WebSocket frames drop that agent; the others keep serving", async () => {
    const [good] = await agents(1);
    const badFrame = async (payload: string | Buffer) => {
      const ws = new WebSocket(wsUrl(cluster.coordinator.url, AGENT_PATH));
      await new Promise((resolve) => ws.once("message", resolve)); // the challenge
      const closed = new Promise<number>((resolve) => ws.once("close", resolve));
      ws.on("error", () => undefined); // the coordinator may cut the socket mid-frame
      ws.send(payload);
      return closed;
    };
    await badFrame("this is not json {");
    await badFrame(JSON.stringify({ t: "frame", id: "s_notgranted", data: "" }));
    await badFrame(Buffer.alloc(2 * 1024 * 1024, 0x41));
    // the close can reach this process before the line that says why does: wait for each line
    await cluster.coordinator.waitForLog((l) => l.msg === "agent dropped" && String(l.why).includes("not a valid agent message"));
    await cluster.coordinator.waitForLog((l) => l.msg === "agent dropped" && String(l.why).includes("before it was granted"));
    await cluster.coordinator.waitForLog((l) => l.msg === "agent dropped" && /Max payload size exceeded/i.test(String(l.why)));
    const res = await chat({ provider: good!.providerId });
    expect(res.status).toBe(200);
    await good!.stop();
  });
});

describe("Faults: the remote coordinator goes down and comes back", () => {
  it("→ 502 directory_unavailable on listings, chat fails fast; then agents and gateway reconnect by themselves", async () => {
    const [agent] = await agents(1);
    const port = new URL(cluster.coordinator.url).port;
    await cluster.coordinator.kill("SIGKILL");
    for (const path of ["/v1/models", "/v1/providers"]) {
      const res = await get(gateway, path);
      expect(res.status).toBe(502);
      expect(await errorOf(res)).toMatchObject({ code: "directory_unavailable", svc_action: "wait" });
      expect(res.headers.get("retry-after")).toBe("2");
    }
    const res = await chat();
    expect(res.status).toBe(502);
    expect(res.headers.get("retry-after")).toBe("2");
    expect(await errorOf(res)).toMatchObject({ code: "directory_unavailable", message: expect.stringContaining("unreachable") });
    await agent!.waitFor(/disconnected: .*; reconnecting in/);

    await cluster.startCoordinator(Number(port));
    await waitForProvider(gateway, agent!.providerId);
    const again = await chat();
    expect(again.status).toBe(200);
    expect(again.headers.get("x-svc-provider")).toBe(agent!.providerId);
    await agent!.stop();
  });
});
