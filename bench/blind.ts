// Bench section "blind" (issue 42 item 6): gateway-blind requests beside the normal path in the same run, the same
// chat completions through one gateway, its own coordinator process and one synthetic agent, in interleaved rounds at
// concurrency 1 and 4 (four callers on this box's two cores: a gateway that never sleeps between requests): added
// latency of blind over normal, and CPU per request in the caller (this process), the gateway, the coordinator and the
// agent. Beside them, the floor: the same blind requests through bench/bare-relay.ts, the least a relay in Node does
// on the same coordinator and agent. Then the client's first request to a new provider (its listing and evidence
// fetched, the evidence checked) against its later ones (the listing kept, the evidence known by its digest: no GET).
import { fileURLToPath } from "node:url";
import { TSX, type Usage } from "../harness/process.ts";
import { createSealedFetch } from "../client/index.ts";
import type { WrittenTinyCatalog } from "../tiny-model/catalog.ts";
import { FetchClient, type RunResult, type Sample } from "./load.ts";
import { OPERATOR_KEY, startAgent, startBenchProcess, startCoordinator, startGateway } from "./procs.ts";
import { interleavedRounds, type Measurable, type RoundRow, type Side } from "./rounds.ts";
import { summarize, type Table } from "./stats.ts";

const TOKENS = 16;
const BODY = { messages: [{ role: "user" as const, content: "Write one sentence about the sea." }], max_tokens: TOKENS, temperature: 0 };
/** The side that sends nothing: each process's idle CPU rate (timers, heartbeats, the audit poll), read in the same rounds. */
const IDLE = "nothing sent (CPU ms per second)";
/** The floor's side: its "gateway" columns are the bare relay's, which the idle side reads as "relay". */
const FLOOR = "blind, through a bare relay (the floor)";
const BARE_RELAY = fileURLToPath(new URL("./bare-relay.ts", import.meta.url));
/** Later requests timed after each fresh client's first. */
const LATER = 4;
/** Each of the warm-up's 8 closed loops (2 passes × JSON and stream × normal and blind), in ms. */
const WARM_MS = 5_000;

/** The bench process's own CPU: the caller's side of every request. */
const caller: Measurable = {
  usage: (): Usage => {
    const { user, system } = process.cpuUsage();
    return { rssMb: 0, peakMb: 0, cpuMs: (user + system) / 1000 };
  },
};

export interface FirstLaterRow {
  request: "first" | "later";
  n: number;
  p50Ms: number;
  p99Ms: number;
  callerCpuMsP50: number;
  /** GETs (listing, evidence) the client sent per request. */
  getsPerRequest: number;
}

export async function blindBench(dir: string, tiny: WrittenTinyCatalog, quick: boolean): Promise<{ rows: { rounds: RoundRow[]; firstLater: FirstLaterRow[] }; tables: Table[] }> {
  const alias = tiny.catalog.default;
  const coordinator = await startCoordinator(dir, tiny.catalogPath, "blind-coordinator");
  const gateway = await startGateway(dir, { coordinator, catalogPath: tiny.catalogPath, name: "blind-gateway" });
  const agent = await startAgent(dir, "blind-agent", coordinator.url, tiny, ["--engine", "synthetic", "--synthetic-tokens", String(TOKENS), "--synthetic-token-ms", "0"]);
  const relay = startBenchProcess(dir, "bare-relay", BARE_RELAY, [coordinator.url, coordinator.secretFile, gateway.url, tiny.catalogPath], {}, TSX);
  try {
    const relayUrl = (await relay.waitFor(/bare relay at (http:\/\/\S+)/, 60_000))[1]!;
    const target = { url: gateway.url, key: OPERATOR_KEY, model: alias };
    const baseURL = `${gateway.url}/v1`;
    const gets = { count: 0 };
    const counted: typeof globalThis.fetch = (input, init) => {
      if ((init?.method ?? "GET") === "GET") gets.count++;
      return globalThis.fetch(input, init);
    };
    const sealedFetch = () => createSealedFetch({ baseURL, apiKey: OPERATOR_KEY, catalog: tiny.catalog, fetch: counted });
    const normal = new FetchClient(target, globalThis.fetch);
    const blind = new FetchClient(target, sealedFetch());
    const floor = new FetchClient({ ...target, url: relayUrl }, createSealedFetch({ baseURL: `${relayUrl}/v1`, apiKey: OPERATOR_KEY, catalog: tiny.catalog }));
    const procs = { caller, gateway: gateway.proc, coordinator: coordinator.proc, agent: agent.proc };
    // warm both paths before anything is counted: connections, the blind client's evidence check, and the JIT, which
    // takes thousands of requests to settle (a gateway's CPU per request fell by a third between 200 and 3,000)
    for (let pass = 0; pass < 2; pass++) {
      for (const stream of [false, true]) for (const client of [normal, blind, floor]) await okOrThrow(client.closedLoop(BODY, { concurrency: 1, stream, durationMs: quick ? 200 : WARM_MS }));
    }
    const sides: Side[] = [
      { path: "normal", procs, run: (concurrency, stream, durationMs) => normal.closedLoop(BODY, { concurrency, durationMs, stream }) },
      { path: "blind", baseline: "normal", procs, run: (concurrency, stream, durationMs) => blind.closedLoop(BODY, { concurrency, durationMs, stream }) },
      { path: FLOOR, baseline: "blind", procs: { ...procs, gateway: relay }, run: (concurrency, stream, durationMs) => floor.closedLoop(BODY, { concurrency, durationMs, stream }) },
      { path: "the listing GET alone (a blind client's, every 2 s)", procs, run: (_c, _s, durationMs) => listingAlone(baseURL, durationMs) },
      { path: IDLE, procs: { ...procs, relay }, run: (_c, _s, durationMs) => idle(durationMs) },
    ];
    const rounds = await interleavedRounds(sides, { label: "blind", rounds: quick ? 2 : 6, concurrency: [1, 4], streams: [false, true], roundMs: () => (quick ? 400 : 2_000) });
    const firstLater = await firstAndLater(target, sealedFetch, gets, quick ? 6 : 40);
    return { rows: { rounds, firstLater }, tables: tables(rounds, firstLater) };
  } finally {
    await relay.stop();
    await agent.proc.stop();
    await gateway.proc.stop();
    await coordinator.proc.stop();
  }
}

async function okOrThrow(run: Promise<RunResult>): Promise<void> {
  if ((await run).errors > 0) throw new Error("blind: a warm-up request failed; the processes' logs are in the bench's folder");
}

/** What a blind client asks besides its POSTs, alone: the listing, which it keeps for listingMaxAgeMs (2 s). */
async function listingAlone(baseURL: string, durationMs: number): Promise<RunResult> {
  const headers = { authorization: `Bearer ${OPERATOR_KEY}` };
  const samples: Sample[] = [];
  const started = performance.now();
  while (performance.now() < started + durationMs) {
    const t = performance.now();
    const res = await fetch(`${baseURL}/providers`, { headers });
    await res.arrayBuffer();
    samples.push({ ms: performance.now() - t, ok: res.ok });
  }
  return { samples, elapsedMs: performance.now() - started, errors: samples.filter((s) => !s.ok).length };
}

/** Nothing sent for `durationMs`: what the processes spend on their own. */
async function idle(durationMs: number): Promise<RunResult> {
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, durationMs));
  return { samples: [], elapsedMs: performance.now() - started, errors: 0 };
}

/**
 * Fresh clients, each with no listing and no evidence checked yet: its first request (both fetched, the evidence
 * checked) and LATER more (the listing kept, the evidence known by its digest), each with the caller's CPU around it.
 */
async function firstAndLater(target: { url: string; key: string; model: string }, sealedFetch: () => typeof globalThis.fetch, gets: { count: number }, trials: number): Promise<FirstLaterRow[]> {
  const tally = { first: { ms: [] as number[], cpu: [] as number[], gets: 0 }, later: { ms: [] as number[], cpu: [] as number[], gets: 0 } };
  for (let trial = 0; trial < trials; trial++) {
    const client = new FetchClient(target, sealedFetch());
    for (let i = 0; i <= LATER; i++) {
      const t = i === 0 ? tally.first : tally.later;
      const cpu = caller.usage().cpuMs;
      const before = gets.count;
      const sample = await client.chat(BODY, false, (why) => console.error(`blind: ${why}`));
      if (!sample.ok) continue;
      t.cpu.push(caller.usage().cpuMs - cpu);
      t.ms.push(sample.ms);
      t.gets += gets.count - before;
    }
  }
  return (["first", "later"] as const).map((request) => {
    const t = tally[request];
    const ms = summarize(t.ms);
    return { request, n: t.ms.length, p50Ms: ms.p50, p99Ms: ms.p99, callerCpuMsP50: summarize(t.cpu).p50, getsPerRequest: t.gets / Math.max(1, t.ms.length) };
  });
}

function tables(rounds: RoundRow[], firstLater: FirstLaterRow[]): Table[] {
  const idleOf = (r: RoundRow) => rounds.find((x) => x.path === IDLE && x.mode === r.mode && x.concurrency === r.concurrency);
  /** ms per request; the idle row's is ms per second */
  const cpu = (r: RoundRow, k: string) => (r.path === IDLE ? ((r.cpuMs[k] ?? Number.NaN) * 1000) / r.elapsedMs : (r.cpuMsPerRequest[k] ?? Number.NaN));
  /** the side's CPU less the idle rate over its time, per request: what its requests cost */
  const marginal = (r: RoundRow, k: string) => {
    const quiet = idleOf(r);
    if (r.path === IDLE || quiet === undefined || r.n === 0) return "-";
    const idleK = r.path === FLOOR && k === "gateway" ? "relay" : k;
    return ((r.cpuMs[k] ?? Number.NaN) - ((quiet.cpuMs[idleK] ?? Number.NaN) * r.elapsedMs) / quiet.elapsedMs) / Math.max(1, r.n + r.errors);
  };
  const dash = (v: number | undefined) => v ?? "-";
  const n = (r: RoundRow) => (r.path === IDLE ? `${(r.elapsedMs / 1000).toFixed(1)} s` : r.n);
  return [
    {
      title: "Blind. Gateway-blind beside the normal path and a bare relay, at concurrency 1 and 4, synthetic agent (16 tokens): latency (ms) and CPU per request (ms)",
      columns: ["mode", "c", "path", "n", "p50", "p99", "added p50", "added p99", "TTFT p50", "CPU caller", "CPU gateway", "CPU gateway, less idle", "CPU coordinator", "CPU agent"],
      rows: rounds.map((r) => [r.mode, r.concurrency, r.path, n(r), r.n ? r.p50Ms : "-", r.n ? r.p99Ms : "-", dash(r.addedP50Ms), dash(r.addedP99Ms), r.n ? dash(r.ttftP50Ms) : "-", cpu(r, "caller"), cpu(r, "gateway"), marginal(r, "gateway"), cpu(r, "coordinator"), cpu(r, "agent")]),
      note: `normal: fetch straight to the gateway, which seals. blind: the same fetch wrapped by createSealedFetch (client/), which seals in this process; it GETs the provider's evidence once (then only when the listing names other evidence) and the listing once every listingMaxAgeMs (2 s), whose cost alone is its own row (per GET), so nearly every blind request is one POST. "${FLOOR}": the same blind client and requests through bench/bare-relay.ts instead of the gateway, on the same coordinator and agent: node:http, the envelope placed as it came, the frames relayed, the receipt's signature checked, one log line, and nothing else (no keys, limits, routing policy, deadlines, usage store or metrics); its gateway columns are the relay's. Added = blind − normal (the floor's: floor − blind), in the same rounds. CPU from /proc/PID/stat for the gateway, coordinator and agent processes, process.cpuUsage() for the caller. "${IDLE}": rounds in which nothing is sent, its CPU columns per second (n: its time); "less idle" is the side's gateway CPU less that rate over the side's time, per request (a slower side carries more idle time per request).`,
    },
    {
      title: "Blind. The client's first request to a new provider against its later ones (non-stream)",
      columns: ["request", "n", "p50 ms", "p99 ms", "caller CPU p50 ms", "GETs per request"],
      rows: firstLater.map((r) => [r.request, r.n, r.p50Ms, r.p99Ms, r.callerCpuMsP50, r.getsPerRequest]),
      note: `first: a new createSealedFetch, whose first request fetches the listing and the provider's evidence and checks it; later: the ${LATER} requests after it, the listing kept and the evidence known by its digest.`,
    },
  ];
}
