// Bench section 4, a peer: svc on synthetic agents (embedded coordinator, and a remote one over WebSocket) next to
// the open-source Portkey gateway in front of a mock OpenAI upstream, one load generator, interleaved rounds.
import type { GenerateRequest } from "../agent/engine/turn.ts";
import { SyntheticEngine } from "../agent/engine/synthetic-engine.ts";
import type { Proc } from "../harness/process.ts";
import type { WrittenTinyCatalog } from "../tiny-model/catalog.ts";
import { directSample } from "./direct.ts";
import { LoadClient, type Sample, type Target } from "./load.ts";
import { MOCK_TOKENS } from "./mock-upstream.ts";
import { startPortkey, startUpstreamProcess } from "./peer-procs.ts";
import { OPERATOR_KEY, startCoordinator, startGateway, startSwarm } from "./procs.ts";
import { interleavedRounds, type RoundRow, type Side } from "./rounds.ts";
import type { Table } from "./stats.ts";

const MESSAGES = [{ role: "user" as const, content: "Write one sentence about the sea." }];
const BODY = { messages: MESSAGES, max_tokens: MOCK_TOKENS, temperature: 0 };
const CONCURRENCY = [1, 10, 50];
/** One synthetic agent per caller at the highest concurrency, as the mock upstream serves every caller at once. */
const AGENTS = 50;

/** A row of the peer's table. */
export type PeerRow = RoundRow;

function httpSide(path: string, client: LoadClient, procs: Record<string, Proc>, baseline?: string): Side {
  return { path, baseline, procs, run: (concurrency, stream, durationMs) => client.closedLoop(BODY, { concurrency, durationMs, stream }) };
}

/** The engine alone in this process: one SyntheticEngine per caller, timed as the load generator times HTTP. */
function engineSide(): Side {
  const request: GenerateRequest = { model: "mock", messages: MESSAGES, max_tokens: MOCK_TOKENS, temperature: 0 };
  const make = () => new SyntheticEngine({ tokens: MOCK_TOKENS, tokenMs: 0, sha256Of: () => "0".repeat(64) });
  return {
    path: "engine direct (in process)",
    procs: {},
    async run(concurrency, _stream, durationMs) {
      const samples: Sample[] = [];
      const started = performance.now();
      const worker = async (engine: SyntheticEngine) => {
        while (performance.now() < started + durationMs) samples.push(await directSample(engine, request));
      };
      await Promise.all(Array.from({ length: concurrency }, () => worker(make())));
      return { samples, elapsedMs: performance.now() - started, errors: 0 };
    },
  };
}

export async function peerBench(dir: string, tiny: WrittenTinyCatalog, quick: boolean): Promise<{ rows: PeerRow[]; tables: Table[]; peer: string }> {
  const rounds = quick ? 2 : 4;
  // quick: short rounds, since starting two svc layouts, two swarms and the peer already takes ~10 s
  const roundMs = quick ? 150 : 600;
  const baselineMs = quick ? 80 : 250;
  const alias = tiny.catalog.default;
  const stops: (() => Promise<void>)[] = [];
  const clients: LoadClient[] = [];
  const client = (target: Target) => {
    const c = new LoadClient(target, Math.max(...CONCURRENCY));
    clients.push(c);
    return c;
  };
  try {
    // svc, embedded coordinator (the in-process LocalFabric): gateway process + one swarm process of agents
    const embedded = await startGateway(dir, { catalogPath: tiny.catalogPath, name: "peer-svc-gateway" });
    stops.push(() => embedded.proc.stop());
    const agents = await startSwarm(dir, embedded.coordinatorUrl, tiny.catalogPath, AGENTS, MOCK_TOKENS, 0, "peer-svc-agents");
    stops.push(() => agents.proc.stop());
    // svc, remote coordinator (`serve --coordinator URL`: the WebSocket fabric)
    const coordinator = await startCoordinator(dir, tiny.catalogPath, "peer-svc-coordinator");
    stops.push(() => coordinator.proc.stop());
    const remote = await startGateway(dir, { coordinator, catalogPath: tiny.catalogPath, name: "peer-svc-gateway-remote" });
    stops.push(() => remote.proc.stop());
    const remoteAgents = await startSwarm(dir, coordinator.url, tiny.catalogPath, AGENTS, MOCK_TOKENS, 0, "peer-svc-agents-remote");
    stops.push(() => remoteAgents.proc.stop());
    // the peer: mock upstream, and Portkey in front of it
    const upstream = await startUpstreamProcess(dir);
    stops.push(() => upstream.proc.stop());
    const portkey = await startPortkey(dir, upstream.url, BODY);
    if ("why" in portkey) console.error(`peer: Portkey left out: ${portkey.why}`);
    else stops.push(() => portkey.proc.stop());

    const svcKey = { key: OPERATOR_KEY, model: alias };
    const sides: Side[] = [
      httpSide("svc, embedded coordinator", client({ url: embedded.url, ...svcKey }), { gateway: embedded.proc, agents: agents.proc }, "engine direct (in process)"),
      httpSide("svc, remote coordinator", client({ url: remote.url, ...svcKey }), { gateway: remote.proc, coordinator: coordinator.proc, agents: remoteAgents.proc }, "engine direct (in process)"),
      ...("why" in portkey ? [] : [httpSide(`Portkey ${portkey.version}`, client(portkey.target), { gateway: portkey.proc, upstream: upstream.proc }, "mock upstream direct")]),
      engineSide(),
      httpSide("mock upstream direct", client({ url: upstream.url, key: "sk-mock-upstream", model: "mock" }), { upstream: upstream.proc }),
    ];
    // warm every path (JIT, connections, the swarm's sessions) before anything is counted
    for (const side of sides) for (const stream of [false, true]) await side.run(10, stream, quick ? 150 : 400);

    const rows = await interleavedRounds(sides, { label: "peer", rounds, concurrency: CONCURRENCY, streams: [false, true], roundMs: (side) => (side.baseline ? roundMs : baselineMs) });
    const peer = "why" in portkey ? `Portkey left out: ${portkey.why}` : `Portkey ${portkey.version}`;
    return { rows, tables: tables(rows, peer), peer };
  } finally {
    for (const c of clients) c.close();
    for (const stop of stops.reverse()) await stop();
  }
}

const dash = (v: number | undefined) => v ?? "-";

function tables(rows: PeerRow[], peer: string): Table[] {
  const cpu = (r: PeerRow, k: string) => dash(r.cpuMsPerRequest[k]);
  const total = (r: PeerRow) => (Object.keys(r.cpuMsPerRequest).length ? Object.values(r.cpuMsPerRequest).reduce((a, b) => a + b, 0) : "-");
  const side: Table = {
    title: `4. Peer, side by side: svc and ${peer.startsWith("Portkey left out") ? "(no peer)" : peer}, synthetic 16-word answers, interleaved rounds`,
    columns: ["mode", "c", "path", "n", "req/s", "p50 ms", "p99 ms", "added p50", "added p99", "TTFT p50", "CPU ms/req gateway", "coordinator", "agents / upstream", "total", "errors"],
    rows: rows.map((r) => [r.mode, r.concurrency, r.path, r.n, r.reqPerS, r.p50Ms, r.p99Ms, dash(r.addedP50Ms), dash(r.addedP99Ms), dash(r.ttftP50Ms), cpu(r, "gateway"), cpu(r, "coordinator"), r.cpuMsPerRequest.agents ?? cpu(r, "upstream"), total(r), r.errors]),
    note: [
      "added: svc − the engine alone in the bench process; Portkey − the same mock upstream called directly over HTTP (so svc's figure also holds the client's HTTP hop, which the peer's baseline already has).",
      "CPU: user+system from /proc per request (10 ms ticks); svc embedded: the coordinator's share is in the gateway's figure; agents: one process of 50 synthetic agents.",
      "Per request svc also does what Portkey does not: HPKE-seals the prompt to the chosen agent's attested key and opens the sealed answer (both ways), checks the agent's signed, request-bound receipt, routes only to agents whose attestation rung meets the floor, and queues per provider (FIFO, one session at a time per agent).",
      peer.startsWith("Portkey left out") ? peer : `${peer}: the npm package's own server entry, bound to 127.0.0.1 by bench/peer-preload.mjs, routed with x-portkey-provider: openai + x-portkey-custom-host.`,
    ].join("\n"),
  };
  const pick = (path: string, mode: string, c: number) => rows.find((r) => r.path === path && r.mode === mode && r.concurrency === c);
  const fabric: Table = {
    title: "4. svc: embedded coordinator (in-process LocalFabric) vs remote coordinator (WebSocket fabric), same rounds",
    columns: ["mode", "c", "p50 embedded", "p50 remote", "req/s embedded", "req/s remote", "CPU ms/req gw+coord embedded", "remote"],
    rows: rows
      .filter((r) => r.path === "svc, embedded coordinator")
      .map((e) => {
        const r = pick("svc, remote coordinator", e.mode, e.concurrency)!;
        const gc = (x: PeerRow) => (x.cpuMsPerRequest.gateway ?? 0) + (x.cpuMsPerRequest.coordinator ?? 0);
        return [e.mode, e.concurrency, e.p50Ms, r.p50Ms, e.reqPerS, r.reqPerS, gc(e), gc(r)];
      }),
    note: "Both have their own 50-agent swarm process; the remote coordinator is its own process (`svc-gateway coordinator`).",
  };
  return [side, fabric];
}
