// docs/operator-guide.md "Rate limits": one key flooding the gateway does not slow another key. A real gateway with three
// synthetic agents and `--key-concurrency 1`; a quiet key's latency is measured alone, then while a second key
// floods, in alternating rounds so that a burst of load from elsewhere on the machine lands on both sides.
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { percentile } from "../../bench/stats.ts";
import { get, post, startGateway, type GatewayProcess } from "../fixtures/gateway.ts";

const FLOOD_KEY = "sk-svc_operator-flood-0123456789";
const QUIET_KEY = "sk-svc_operator-quiet-0123456789";
/** 20 tokens 5 ms apart: a request takes about 100 ms of provider time, most of it waiting, not computing. */
const AGENT = ["--engine", "synthetic", "--synthetic-tokens", "20", "--synthetic-token-ms", "5"];
/**
 * 100 timed requests on each side: the fewest at which p99 is still the second slowest (bench/stats.ts's rank,
 * ceil(0.99 n) - 1), so one stray stall on a shared machine cannot decide the check alone.
 */
const ROUNDS = 4;
const PER_ROUND = 25;
const FLOODERS = 8;
/**
 * Each flooder's pause between answers, as a client retrying at once without reading Retry-After: with 8 of
 * them, hundreds of requests a second, far past the 10 a second one slot allows, without taking the whole
 * 2-core machine from the test files running beside this one.
 */
const FLOOD_PAUSE_MS = 20;

let gw: GatewayProcess;

beforeAll(async () => {
  gw = await startGateway({ agents: 3, agentsAtOnce: true, agentArgs: AGENT, args: ["--key-concurrency", "1"], env: { SVC_OPERATOR_KEYS: `${FLOOD_KEY},${QUIET_KEY}` } });
}, 180_000);
afterAll(() => gw.stop());

const ask = (key: string) => post({ url: gw.url, key }, "/v1/chat/completions", { messages: [{ role: "user", content: "hi" }] });

/** One quiet request's latency in ms; it must succeed. */
async function timed(): Promise<number> {
  const started = performance.now();
  const res = await ask(QUIET_KEY);
  const body = await res.text();
  if (res.status !== 200) throw new Error(`the quiet key got ${res.status}: ${body}`);
  return performance.now() - started;
}

async function sample(n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await timed());
  return out;
}

/** Flood loops: each sends the flood key's requests back to back until stopped, counting every answer. */
function flood() {
  const statuses = new Map<number | string, number>();
  let running = true;
  const loop = async () => {
    while (running) {
      try {
        const res = await ask(FLOOD_KEY);
        await res.arrayBuffer();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      } catch (err) {
        statuses.set(String(err), (statuses.get(String(err)) ?? 0) + 1);
      }
      await sleep(FLOOD_PAUSE_MS);
    }
  };
  const loops = Array.from({ length: FLOODERS }, loop);
  return {
    statuses,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

describe("Rate limits: a flooded key does not slow another key", () => {
  it("the quiet key's p99 stays within 2x its unloaded p99 while the flood key gets mostly 429s, and nothing is lost", async () => {
    await sample(10); // warm: the first requests pay for connections and lazy setup
    const alone: number[] = [];
    const loaded: number[] = [];
    const statuses = new Map<number | string, number>();
    for (let round = 0; round < ROUNDS; round++) {
      alone.push(...(await sample(PER_ROUND)));
      const f = flood();
      loaded.push(...(await sample(PER_ROUND)));
      await f.stop();
      for (const [status, n] of f.statuses) statuses.set(status, (statuses.get(status) ?? 0) + n);
    }
    const figures = {
      alone: { p50: percentile(alone, 50), p99: percentile(alone, 99) },
      loaded: { p50: percentile(loaded, 50), p99: percentile(loaded, 99) },
      flood: Object.fromEntries(statuses),
    };
    console.log(`rate-limit isolation: ${JSON.stringify(figures)}`);
    // every flood request was answered, 200 or 429 and nothing else, and most were 429s
    expect([...statuses.keys()].sort()).toEqual([200, 429]);
    expect(statuses.get(429)!).toBeGreaterThan(9 * statuses.get(200)!);
    expect(figures.loaded.p99).toBeLessThanOrEqual(2 * figures.alone.p99);
    // each 429 was the flood key's concurrency limit, as /metrics counts it
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metrics).toContain(`svc_gateway_rate_limited_total{limit="concurrency"} ${statuses.get(429)}\n`);
    // no process restarted or left: the gateway and every agent are the ones started, all still listed
    for (const proc of [gw, ...gw.agents]) expect(proc.child.exitCode).toBeNull();
    expect(gw.stderr()).toBe("");
    for (const agent of gw.agents) expect(agent.stdout()).not.toContain("disconnected");
    const listed = (await (await get({ url: gw.url, key: QUIET_KEY }, "/v1/providers")).json()) as { id: string }[];
    expect(listed.map((p) => p.id).sort()).toEqual(gw.agents.map((a) => a.providerId).sort());
  }, 240_000);
});
