// Liveness on a loaded machine (docs/architecture.md "Faults"; issue 41 item 9, starved, not dead): with a busy loop
// on every core, live agents are never dropped and every request is answered, real llama.cpp agents loading their
// model included, and an agent whose event loop is held for seconds finishes its session; a dead agent (killed,
// stopped, or its event loop stuck for good) is still dropped within the documented bounds. The busy loops run only
// over what each test watches (not while its gateway starts), so they starve the rest of the suite no longer than
// that: the synthetic-engine scenarios run side by side under one busy loop per core (each is mostly waiting for a
// bound), the real llama.cpp one alone after them. The production heartbeat is in force: no fixture sets another.
import { availableParallelism } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deadPeerBoundMs, DEFAULT_HEARTBEAT_MS, idlePeerBoundMs } from "../../src/link/heartbeat.ts";
import { MAIN_STALL_ALLOWED_MS } from "../../agent/daemon/link-thread.ts";
import { listProviders, post, startAgent, startGateway, waitForProvider, type AgentProcess, type GatewayProcess } from "../fixtures/gateway.ts";
import { startProcess, type Proc } from "../../harness/process.ts";
import { followSse, readSse } from "../../harness/sse.ts";

/** Long enough for several busy heartbeat intervals (2 s) and their allowed silence (4 s) to pass under load (idle: 4.5 s and 9 s). */
const LOADED_MS = 20_000;
/**
 * What a verdict may take past its bound here: the coordinator counts silence only over the time it could have
 * heard it, so each of its own stalls under the hogs (a late timer, a slow turn) moves its verdict as late.
 */
const SLACK_MS = 4_000;

const synthetic = (tokens: number, ms: number) => ["--engine", "synthetic", "--synthetic-tokens", String(tokens), "--synthetic-token-ms", String(ms)];
const chat = { messages: [{ role: "user", content: "hi" }], max_tokens: 8 };

let hogs: Proc[] = [];
let loaded = 0;
/**
 * Runs `work` with a busy loop on every core, stopped whatever `work` does. Tests that run at the same time share
 * one loop per core: each sees every core busy, none sees more hogs than cores.
 */
async function underLoad<T>(work: () => Promise<T>): Promise<T> {
  if (loaded++ === 0) hogs = Array.from({ length: availableParallelism() }, () => startProcess("-e", ["for (;;) {}"], { name: "cpu hog" }));
  try {
    return await work();
  } finally {
    if (--loaded === 0) await Promise.all(hogs.map((hog) => hog.kill("SIGKILL")));
  }
}

const drops = (gw: GatewayProcess) => gw.logs().filter((l) => l.msg === "agent dropped");
/** When (ms since the epoch, the coordinator's clock) the coordinator first logged `msg` about `provider`. */
const loggedAt = async (gw: GatewayProcess, msg: string, provider: string, timeoutMs: number) =>
  Date.parse(String((await gw.waitForLog((l) => l.msg === msg && l.provider === provider, timeoutMs)).time));

/** The gateways of the three scenarios that run side by side: all started, side by side, before any busy loop. */
let live: GatewayProcess | undefined;
let holding: GatewayProcess | undefined;
let dying: GatewayProcess | undefined;

/** A gateway with two agents that hold their event loop on their next session: one for 6 s, one past the allowance. */
async function holdingGateway(): Promise<GatewayProcess> {
  const gw = await startGateway({ agents: 0 });
  try {
    gw.agents.push(
      ...(await Promise.all([
        startAgent(gw.coordinatorUrl, gw.tiny, { args: [...synthetic(8, 20), "--test-fault", "block-ms=6000"] }),
        startAgent(gw.coordinatorUrl, gw.tiny, { args: [...synthetic(8, 20), "--test-fault", `block-ms=${MAIN_STALL_ALLOWED_MS + 10_000}`] }),
      ])),
    );
    for (const agent of gw.agents) await waitForProvider(gw, agent.providerId);
  } catch (err) {
    await gw.stop();
    throw err;
  }
  return gw;
}

beforeAll(async () => {
  const started = await Promise.allSettled([
    startGateway({ agents: 2, agentArgs: synthetic(8, 20) }),
    holdingGateway(),
    // answers of 100 s: a stream is still running whenever the test, itself starved, gets round to stopping its agent
    startGateway({ agents: 3, agentArgs: synthetic(2_000, 50) }),
  ]);
  [live, holding, dying] = started.map((r) => (r.status === "fulfilled" ? r.value : undefined));
  const failed = started.find((r) => r.status === "rejected");
  if (failed) throw failed.reason;
}, 120_000);
// each scenario stops its own when it is done; this is for a start that failed half way
afterAll(() => Promise.all([live, holding, dying].map((gw) => gw?.stop())));

describe.concurrent("Faults: a loaded machine drops no live agent", () => {
  let gw: GatewayProcess;
  beforeAll(() => void (gw = live!));
  afterAll(() => gw?.stop());

  it(`with every core busy for ${LOADED_MS / 1000} s, every request is answered and no agent disconnects`, async () => {
    let answered = 0;
    await underLoad(async () => {
      const deadline = Date.now() + LOADED_MS;
      while (Date.now() < deadline) {
        const whole = await post(gw, "/v1/chat/completions", chat);
        expect(whole.status).toBe(200);
        await whole.json();
        const stream = await readSse(await post(gw, "/v1/chat/completions", { ...chat, stream: true }));
        expect(stream.data.at(-1)).toBe("[DONE]");
        answered += 2;
        // idle gaps too: a quiet link lives on pings alone
        await new Promise((resolve) => setTimeout(resolve, 1_500));
      }
    });
    expect(answered).toBeGreaterThan(0);
    for (const agent of gw.agents) expect(agent.stdout()).not.toContain("disconnected");
    expect(drops(gw)).toEqual([]);
  }, 60_000);
});

describe.concurrent("Faults: an agent whose event loop is held", () => {
  let gw: GatewayProcess;
  beforeAll(() => void (gw = holding!));
  afterAll(() => gw?.stop());

  it(`for 6 s in one call (longer than the busy allowance, ${deadPeerBoundMs(DEFAULT_HEARTBEAT_MS)} ms) stays listed and finishes its session; past ${MAIN_STALL_ALLOWED_MS / 1000} s it is dropped within that and the busy bound, and its pinned request gets 503 provider_unavailable`, async () => {
    const [held, stuck] = [gw.agents[0]!, gw.agents[1]!];
    await underLoad(async () => {
      const started = Date.now();
      const answer = post(gw, "/v1/chat/completions", { ...chat, provider: held.providerId });
      const lost = post(gw, "/v1/chat/completions", { ...chat, provider: stuck.providerId });
      await waitForProvider(gw, held.providerId, (r) => r?.busy === true);
      await waitForProvider(gw, stuck.providerId, (r) => r?.busy === true);
      const stuckSince = Date.now();
      // listed, and busy, all through the hold
      let listed = 0;
      while (Date.now() - started < 5_500) {
        const record = (await listProviders(gw)).find((p) => p.id === held.providerId);
        expect(record?.busy, "listed, with its session").toBe(true);
        listed++;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(listed).toBeGreaterThan(1);
      const res = await answer;
      expect(res.status, await res.clone().text()).toBe(200);
      expect(Date.now() - started).toBeGreaterThanOrEqual(6_000);
      expect(held.stdout()).not.toContain("disconnected");
      expect(drops(gw).filter((l) => l.provider === held.providerId)).toEqual([]);

      const dropped = await loggedAt(gw, "agent dropped", stuck.providerId, MAIN_STALL_ALLOWED_MS + 30_000);
      // the beats went on while the hold was shorter than the allowance, and stopped within a beat of it
      expect(dropped - started).toBeGreaterThanOrEqual(MAIN_STALL_ALLOWED_MS);
      expect(dropped - stuckSince).toBeLessThan(MAIN_STALL_ALLOWED_MS + deadPeerBoundMs(DEFAULT_HEARTBEAT_MS) + SLACK_MS);
      const gone = await lost;
      expect(gone.status).toBe(503);
      expect(((await gone.json()) as { error: { code: string } }).error.code).toBe("provider_unavailable");
    });
  }, 120_000);
});

describe.concurrent("Faults: a dead agent is still found on a loaded machine, within the documented bounds", () => {
  let gw: GatewayProcess;
  beforeAll(() => void (gw = dying!));
  afterAll(async () => {
    for (const agent of gw?.agents ?? []) agent.child.kill("SIGCONT");
    await gw?.stop();
  });

  /** A stream from `agent`, once its first token is in; `done` settles when it ends. */
  const streaming = async (agent: AgentProcess) => {
    const { firstContent, done } = followSse(post(gw, "/v1/chat/completions", { ...chat, max_tokens: 2_000, stream: true, provider: agent.providerId }));
    await firstContent;
    return { done }; // wrapped: an async function returning the promise itself would wait for the whole stream
  };

  it(`stopped mid-stream (SIGSTOP): dropped within the busy bound (${deadPeerBoundMs(DEFAULT_HEARTBEAT_MS)} ms), the stream ends with provider_error`, () =>
    underLoad(async () => {
      const agent = gw.agents[0]!;
      const { done } = await streaming(agent);
      agent.child.kill("SIGSTOP");
      const stopped = Date.now();
      const dropped = await loggedAt(gw, "agent dropped", agent.providerId, deadPeerBoundMs(DEFAULT_HEARTBEAT_MS) + 10_000);
      expect(dropped - stopped).toBeLessThan(deadPeerBoundMs(DEFAULT_HEARTBEAT_MS) + SLACK_MS);
      expect(JSON.parse((await done).data.at(-1)!)).toMatchObject({ error: { code: "provider_error" } });
    }), 30_000);

  it(`stopped while idle (SIGSTOP): dropped within the idle bound (${idlePeerBoundMs(DEFAULT_HEARTBEAT_MS)} ms), and not at the busy one`, () =>
    underLoad(async () => {
      const agent = gw.agents[1]!;
      // its last word just now (an idle agent's beats come up to 5.4 s apart): its silence is timed from here
      expect((await post(gw, "/v1/chat/completions", { ...chat, max_tokens: 1, provider: agent.providerId })).status).toBe(200);
      agent.child.kill("SIGSTOP");
      const stopped = Date.now();
      const dropped = await loggedAt(gw, "agent dropped", agent.providerId, idlePeerBoundMs(DEFAULT_HEARTBEAT_MS) + 10_000);
      expect(dropped - stopped).toBeGreaterThan(deadPeerBoundMs(DEFAULT_HEARTBEAT_MS));
      expect(dropped - stopped).toBeLessThan(idlePeerBoundMs(DEFAULT_HEARTBEAT_MS) + SLACK_MS);
    }), 30_000);

  it("killed mid-stream (SIGKILL): gone at once, the stream ends with provider_error", () =>
    underLoad(async () => {
      const agent = gw.agents[2]!;
      const { done } = await streaming(agent);
      await agent.kill("SIGKILL");
      const killed = Date.now();
      const gone = await loggedAt(gw, "agent disconnected", agent.providerId, deadPeerBoundMs(DEFAULT_HEARTBEAT_MS) + 10_000);
      expect(gone - killed).toBeLessThan(deadPeerBoundMs(DEFAULT_HEARTBEAT_MS) + SLACK_MS);
      expect(JSON.parse((await done).data.at(-1)!)).toMatchObject({ error: { code: "provider_error" } });
    }), 30_000);
});

describe("Faults: real llama.cpp agents on a loaded machine stay listed, their first session (the model's load) included", () => {
  let gw: GatewayProcess;
  beforeAll(async () => {
    // fresh agents: the first session of each loads the model, whose chat template node-llama-cpp resolves in one
    // synchronous call of seconds on this machine
    gw = await startGateway({ agents: 2 });
  }, 60_000);
  afterAll(() => gw?.stop());

  it(`three callers for ${LOADED_MS / 1000} s (plain, streamed, json_schema): every request answered, no agent dropped`, async () => {
    const failures: string[] = [];
    let answered = 0;
    let deadline = 0;
    const caller = async (c: number) => {
      for (let i = 0; Date.now() < deadline; i++) {
        const schema = { type: "object", properties: { [`k${c}_${i}`]: { type: "string", maxLength: 12 } }, required: [`k${c}_${i}`] };
        const body =
          i % 3 === 2
            ? { ...chat, max_tokens: 48, response_format: { type: "json_schema", json_schema: { name: "x", schema } } }
            : { messages: [{ role: "user", content: `hello ${"word ".repeat(40 * (i % 3))}` }], max_tokens: 48, stream: i % 3 === 1 };
        const res = await post(gw, "/v1/chat/completions", body);
        const text = await res.text();
        // a stream that failed after its head carries the error in its data
        if (res.status !== 200 || text.includes('"error"')) failures.push(`caller ${c} request ${i}: ${res.status} ${text.slice(0, 300)}`);
        else answered++;
        if (i % 4 === 3) await new Promise((resolve) => setTimeout(resolve, 2_000 * (c + 1)));
      }
    };
    await underLoad(async () => {
      deadline = Date.now() + LOADED_MS;
      await Promise.all([0, 1, 2].map(caller));
    });
    expect(failures).toEqual([]);
    expect(answered).toBeGreaterThan(3);
    for (const agent of gw.agents) {
      expect(agent.stdout()).toMatch(/loaded qwen3-4b/);
      expect(agent.stdout()).not.toContain("disconnected");
    }
    expect(drops(gw)).toEqual([]);
  }, 120_000);
});
