// Bench section 8, replicas (issue 32): 2 gateways + 2 coordinators on a three-node NATS cluster and PostgreSQL
// against one embedded gateway on SQLite, the same load side by side in interleaved rounds, so the replica hop's
// cost is a number (added p50/p99, req/s, CPU per request by process); then many agents spread over the two
// coordinators, listed in full by both gateways and routed through both.
import type { WrittenTinyCatalog } from "../tiny-model/catalog.ts";
import { clusterMissing, startClusterProcs, summed, type ClusterProcs } from "./cluster-procs.ts";
import { closedLoopOver, LoadClient } from "./load.ts";
import { OPERATOR_KEY, startSwarm } from "./procs.ts";
import { interleavedRounds, type Measurable, type RoundRow, type Side } from "./rounds.ts";
import { listMs, waitListed } from "./scale.ts";
import { fmt, summarize, type Table } from "./stats.ts";

const BODY = { messages: [{ role: "user", content: "Write one sentence about the sea." }], max_tokens: 16, temperature: 0 };
/** Agents for the side-by-side load: one per caller at the highest concurrency, half on each coordinator. */
const AGENTS = 50;
const EMBEDDED = "embedded gateway (SQLite)";
const CLUSTER = "2 gateways + 2 coordinators (NATS, PostgreSQL)";

export interface ManyAgents {
  path: string;
  agents: number;
  /** Both swarms started together until every agent of both advertises. */
  connectMs: number;
  /** Until both gateways list every agent, from the swarms' start. */
  listedMs: number;
  /** One GET /v1/providers on each gateway, and how many it listed. */
  lists: { ms: number; count: number }[];
  /** Resident memory, MiB, by process. */
  rssMb: Record<string, number>;
  requests: number;
  errors: number;
  reqPerS: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU each swarm spent over the routed requests, ms: agents on both coordinators served. */
  swarmCpuMs: number[];
}

export type ClusterResult = { skipped: string } | { rows: RoundRow[]; many: ManyAgents[] };

/** Where the many agents go: the gateways that must list them, a coordinator URL for each of the two swarms. */
interface Layout {
  path: string;
  gateways: { proc: Measurable; url: string }[];
  coordinators: string[];
  /** The layout's other processes whose memory is reported. */
  others: Record<string, Measurable>;
}

export async function clusterBench(dir: string, tiny: WrittenTinyCatalog, quick: boolean): Promise<{ results: ClusterResult; tables: Table[] }> {
  const missing = clusterMissing();
  if (missing) {
    console.log(`cluster: skipped: ${missing}`);
    return { results: { skipped: missing }, tables: [] };
  }
  const procs = await startClusterProcs(dir, tiny);
  const clients: LoadClient[] = [];
  const client = (url: string) => {
    const c = new LoadClient({ url, key: OPERATOR_KEY, model: tiny.catalog.default }, 64);
    clients.push(c);
    return c;
  };
  try {
    const rows = await sideBySide(dir, tiny, quick, procs, client);
    const agents = quick ? 1_000 : 10_000;
    // the same swarms on the embedded gateway first, in the same run: "as before" measured beside the replicas
    const layouts: Layout[] = [
      { path: EMBEDDED, gateways: [procs.embedded], coordinators: [procs.embedded.coordinatorUrl, procs.embedded.coordinatorUrl], others: {} },
      {
        path: CLUSTER,
        gateways: procs.gateways,
        coordinators: procs.coordinators.map((c) => c.url),
        others: { ...Object.fromEntries(procs.coordinators.map((c, i) => [`coordinator ${i + 1}`, c.proc])), ...Object.fromEntries(procs.nats.nodes.map((n, i) => [`nats ${i + 1}`, n.proc])), postgres: procs.postgres },
      },
    ];
    const many: ManyAgents[] = [];
    for (const layout of layouts) many.push(await manyAgents(dir, tiny, agents, quick, layout, client));
    return { results: { rows, many }, tables: tables(rows, many) };
  } finally {
    for (const c of clients) c.close();
    await procs.stop();
  }
}

/** The comparison: each side its own swarm of AGENTS (the cluster's split over its two coordinators). */
async function sideBySide(dir: string, tiny: WrittenTinyCatalog, quick: boolean, procs: ClusterProcs, client: (url: string) => LoadClient): Promise<RoundRow[]> {
  const [embeddedAgents, ...clusterAgents] = await Promise.all([
    startSwarm(dir, procs.embedded.coordinatorUrl, tiny.catalogPath, AGENTS, 16, 0, "cluster-embedded-agents"),
    ...procs.coordinators.map((c, i) => startSwarm(dir, c.url, tiny.catalogPath, AGENTS / 2, 16, 0, `cluster-agents-${i + 1}`)),
  ]);
  try {
    for (const url of [procs.embedded.url, ...procs.gateways.map((g) => g.url)]) await waitListed(url, AGENTS);
    const embeddedClient = client(procs.embedded.url);
    const clusterClients = procs.gateways.map((g) => client(g.url));
    const parts = (list: { proc: Measurable }[]) => summed(list.map((x) => x.proc));
    const sides: Side[] = [
      {
        path: EMBEDDED,
        procs: { gateway: procs.embedded.proc, agents: embeddedAgents!.proc },
        run: (concurrency, stream, durationMs) => embeddedClient.closedLoop(BODY, { concurrency, durationMs, stream }),
      },
      {
        path: CLUSTER,
        baseline: EMBEDDED,
        procs: {
          gateway: parts(procs.gateways),
          coordinator: parts(procs.coordinators),
          nats: summed(procs.nats.nodes.map((n) => n.proc)),
          postgres: procs.postgres,
          agents: parts(clusterAgents),
        },
        // a round-robin load balancer in front of the two gateways
        run: (concurrency, stream, durationMs) => closedLoopOver(clusterClients, BODY, { concurrency, durationMs, stream }),
      },
    ];
    for (const side of sides) for (const stream of quick ? [false] : [false, true]) await side.run(10, stream, quick ? 300 : 800); // warm-up
    return await interleavedRounds(sides, {
      label: "cluster",
      rounds: quick ? 2 : 4,
      concurrency: quick ? [1, 10] : [1, 10, 50],
      streams: quick ? [false] : [false, true],
      roundMs: () => (quick ? 300 : 1_000),
    });
  } finally {
    await Promise.all([embeddedAgents, ...clusterAgents].map((s) => s!.proc.stop()));
  }
}

/** `agents` synthetic agents in two swarms, one per coordinator URL: connected, listed in full by every gateway, routed through all. */
async function manyAgents(dir: string, tiny: WrittenTinyCatalog, agents: number, quick: boolean, layout: Layout, client: (url: string) => LoadClient): Promise<ManyAgents> {
  for (const g of layout.gateways) await waitListed(g.url, 0);
  const started = performance.now();
  const swarms = await Promise.all(layout.coordinators.map((url, i) => startSwarm(dir, url, tiny.catalogPath, agents / 2, 16, 0, `many-${layout.gateways.length}-${i + 1}`)));
  try {
    const connectMs = Math.max(...swarms.map((s) => s.connectMs));
    for (const g of layout.gateways) await waitListed(g.url, agents, 120_000);
    const listedMs = performance.now() - started;
    const lists = [];
    for (const g of layout.gateways) lists.push(await listMs(g.url));
    const rssMb: Record<string, number> = {};
    layout.gateways.forEach((g, i) => (rssMb[`gateway ${i + 1}`] = g.proc.usage().rssMb));
    for (const [name, p] of Object.entries(layout.others)) rssMb[name] = p.usage().rssMb;
    swarms.forEach((s, i) => (rssMb[`swarm ${i + 1}`] = s.proc.usage().rssMb));
    const before = swarms.map((s) => s.proc.usage().cpuMs);
    const requests = quick ? 400 : 4_000;
    const result = await closedLoopOver(layout.gateways.map((g) => client(g.url)), BODY, { concurrency: 32, requests });
    if (result.firstError) console.error(`cluster: ${layout.path}, ${agents} agents: ${result.errors} failed, the first with: ${result.firstError.slice(0, 300)}`);
    const ok = result.samples.filter((s) => s.ok);
    const lat = summarize(ok.map((s) => s.ms));
    return {
      path: layout.path,
      agents,
      connectMs,
      listedMs,
      lists,
      rssMb,
      requests,
      errors: result.errors,
      reqPerS: (ok.length / result.elapsedMs) * 1000,
      p50Ms: lat.p50,
      p99Ms: lat.p99,
      swarmCpuMs: swarms.map((s, i) => s.proc.usage().cpuMs - before[i]!),
    };
  } finally {
    await Promise.all(swarms.map((s) => s.proc.stop()));
  }
}

const dash = (v: number | undefined) => v ?? "-";

function tables(rows: RoundRow[], many: ManyAgents[]): Table[] {
  const cpu = (r: RoundRow, k: string) => dash(r.cpuMsPerRequest[k]);
  const total = (r: RoundRow) => Object.values(r.cpuMsPerRequest).reduce((a, b) => a + b, 0);
  return [
    {
      title: `8. Replicas: ${CLUSTER} against one ${EMBEDDED}, same load, interleaved rounds`,
      columns: ["mode", "c", "path", "n", "req/s", "p50 ms", "p99 ms", "added p50", "added p99", "TTFT p50", "CPU ms/req gateways", "coordinators", "nats", "postgres", "agents", "total", "errors"],
      rows: rows.map((r) => [r.mode, r.concurrency, r.path, r.n, r.reqPerS, r.p50Ms, r.p99Ms, dash(r.addedP50Ms), dash(r.addedP99Ms), dash(r.ttftP50Ms), cpu(r, "gateway"), cpu(r, "coordinator"), cpu(r, "nats"), cpu(r, "postgres"), cpu(r, "agents"), total(r), r.errors]),
      note: [
        `added: the replicas' latency less the embedded gateway's in the same rounds: the cost of the replica hop. ${AGENTS} synthetic agents on each side (${AGENTS / 2} on each coordinator); the load goes to the two gateways in turn, request by request, as a round-robin balancer would.`,
        "CPU: user+system from /proc per request, summed over the processes of a role (2 gateways, 2 coordinators, 3 nats-server nodes, the postmaster and its backends); the embedded gateway's coordinator is in its gateway figure.",
      ].join("\n"),
    },
    {
      title: `8. Replicas: ${many[0]?.agents.toLocaleString("en")} synthetic agents in two swarms, listed and routed through every gateway`,
      columns: ["path", "agents", "connect ms", "listed by all ms", "list ms per gateway", "listed per gateway", "requests", "errors", "req/s", "p50 ms", "p99 ms", "swarm CPU ms 1 / 2"],
      rows: many.map((m) => [m.path, m.agents, m.connectMs, m.listedMs, m.lists.map((l) => fmt(l.ms)).join(" / "), m.lists.map((l) => l.count).join(" / "), m.requests, m.errors, m.reqPerS, m.p50Ms, m.p99Ms, m.swarmCpuMs.map(fmt).join(" / ")]),
      note: [
        "Two swarm processes of half the agents each, started together: on the replicas one per coordinator, on the embedded gateway both on its coordinator, one layout after the other. connect: until every agent of both advertises; listed by all: until every gateway lists all of them; requests: closed loop at concurrency 32 over the gateways in turn; swarm CPU: each swarm's CPU over those requests (on the replicas: both coordinators' agents served).",
        ...many.map((m) => `RSS MiB, ${m.path}: ${Object.entries(m.rssMb).map(([k, v]) => `${k} ${fmt(v)}`).join(", ")}.`),
        "postgres: the postmaster and its backends summed, so its shared buffers count once per process.",
      ].join("\n"),
    },
  ];
}
