// `npm run bench [-- --quick] [-- --only overhead,blind,scale,engine,peer,startup,attack,agent,cluster,audit]`: measures the gateway
// path against the direct path, gateway-blind requests beside the normal path, throughput and scale against synthetic agents, our engine against raw node-llama-cpp,
// svc next to a peer gateway, the bins' startup compiled against through tsx, an honest caller beside a
// hostile-schema attack, an agent's growing conversation, and replicas on NATS and PostgreSQL against one embedded
// gateway, and what audits of the weights catch and cost, all in one run on this machine;
// prints the tables and saves them as JSON and Markdown in bench/results/local/ (ignored by git), or in --out DIR:
// `--out bench/results` records a run beside the ones bench/README.md cites.
import { Command } from "commander";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildDist } from "../harness/build.ts";
import { agentBench } from "./agent-turns.ts";
import { clusterBench } from "./cluster.ts";
import { attackBench } from "./attack.ts";
import { auditBench } from "./audit-bench.ts";
import { blindBench } from "./blind.ts";
import { makeDirs } from "../src/process/make-dir.ts";
import { writeTinyCatalog, type WrittenTinyCatalog } from "../tiny-model/catalog.ts";
import { engineBench } from "./engine-bench.ts";
import { logprobsBench } from "./logprobs-bench.ts";
import { gatewayOverhead } from "./overhead.ts";
import { peerBench } from "./peer.ts";
import { profileInto } from "./procs.ts";
import { scaleBench } from "./scale.ts";
import { startupBench } from "./startup.ts";
import { renderTable, type Table } from "./stats.ts";

const SECTIONS = ["overhead", "blind", "scale", "engine", "peer", "startup", "attack", "agent", "cluster", "audit"] as const;
type Section = (typeof SECTIONS)[number];
/** A section's run: what it keeps in the results file, and its tables. */
type Run = (dir: string, tiny: WrittenTinyCatalog, quick: boolean) => Promise<{ result: unknown; tables: Table[] }>;

const opts = new Command("npm run bench")
  .option("--quick", "fewer samples and steps: under a minute")
  .option("--only <sections>", `comma-separated subset of ${SECTIONS.join(",")}`)
  .option("--agents <counts>", "scale section: only these agent counts, comma-separated (e.g. 100,1000); skips the streams step")
  .option("--cpu-prof <dir>", "write a V8 CPU profile of every gateway, coordinator and agent process into this folder")
  .option("--out <dir>", "save the results here (bench/results to record them with the README's)", fileURLToPath(new URL("./results/local/", import.meta.url)))
  .parse()
  .opts<{ quick?: boolean; only?: string; cpuProf?: string; agents?: string; out: string }>();

const only = new Set((opts.only ?? SECTIONS.join(",")).split(","));
const unknown = [...only].filter((name) => !(SECTIONS as readonly string[]).includes(name));
if (unknown.length > 0) {
  console.error(`npm run bench: --only: no section ${unknown.join(", ")} (the sections: ${SECTIONS.join(",")})`);
  process.exit(2);
}
if (opts.cpuProf) profileInto(opts.cpuProf);
// every section runs the compiled bins (dist/), as installed; unchanged sources leave dist/ as it is
buildDist();

const keepRows = (r: { rows: unknown; tables: Table[] }) => ({ result: r.rows, tables: r.tables });
const keepResults = (r: { results: unknown; tables: Table[] }) => ({ result: r.results, tables: r.tables });
/** The sections, in the order they run. */
const RUNS: Record<Section, Run> = {
  overhead: async (dir, tiny, quick) => keepRows(await gatewayOverhead(dir, tiny, quick)),
  blind: async (dir, tiny, quick) => keepRows(await blindBench(dir, tiny, quick)),
  scale: async (dir, tiny, quick) => keepResults(await scaleBench(dir, tiny, quick, opts.agents?.split(",").map(Number))),
  engine: async (dir, tiny, quick) => {
    // svc's engine against raw node-llama-cpp, then its cost of logprobs, side by side in one run
    const raw = await engineBench(dir, tiny, quick);
    const logprobs = await logprobsBench(dir, quick);
    return { result: { raw: raw.results, logprobs: logprobs.results }, tables: [...raw.tables, ...logprobs.tables] };
  },
  peer: async (dir, tiny, quick) => peerBench(dir, tiny, quick).then((r) => ({ result: { peer: r.peer, rows: r.rows }, tables: r.tables })),
  startup: async (_dir, _tiny, quick) => {
    const { rows, install, tables } = startupBench(quick);
    return { result: { rows, install }, tables };
  },
  attack: async (dir, tiny, quick) => keepRows(await attackBench(dir, tiny, quick)),
  agent: async (dir, tiny, quick) => keepRows(await agentBench(dir, tiny, quick)),
  cluster: async (dir, tiny, quick) => keepResults(await clusterBench(dir, tiny, quick)),
  audit: async (dir, _tiny, quick) => keepResults(await auditBench(dir, quick)),
};

/** Indented JSON with each array of plain values on one line (the audit section keeps a tuple per audit). */
const compactJson = (value: unknown) => JSON.stringify(value, null, 2).replace(/\[\n\s*([^[\]{}]*?)\n\s*\]/g, (_, inner: string) => `[${inner.split(/,\n\s*/).join(", ")}]`);

const quick = opts.quick === true;
const dir = mkdtempSync(join(os.tmpdir(), "svc-bench-"));
const started = new Date();
const tables: Table[] = [];
const results: Record<string, unknown> = {};
const print = (t: Table[]) => {
  for (const table of t) console.log(renderTable(table));
  tables.push(...t);
};

console.log(`svc bench ${quick ? "(quick) " : ""}on ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${started.toISOString()}\n`);
try {
  // every section uses the same tiny random-weight qwen3; "never" ends turns early, so answers run to max_tokens
  const tiny = writeTinyCatalog(join(dir, "tiny"), [{ alias: "tiny-random", seed: 7, endOfTurn: "never" }], "svc-bench");
  for (const section of SECTIONS.filter((name) => only.has(name))) {
    const { result, tables: made } = await RUNS[section](dir, tiny, quick);
    results[section] = result;
    print(made);
  }
  const seconds = (Date.now() - started.getTime()) / 1000;
  const resultsDir = opts.out;
  makeDirs(resultsDir);
  const stamp = started.toISOString().replace(/[:.]/g, "-");
  const record = { date: started.toISOString(), quick, seconds, machine: { cores: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version }, results, tables };
  const file = join(resultsDir, `${stamp}${quick ? "-quick" : ""}.json`);
  writeFileSync(file, `${compactJson(record)}\n`);
  writeFileSync(join(resultsDir, "latest.md"), `Run ${started.toISOString()}${quick ? " (quick)" : ""}, ${seconds.toFixed(0)} s\n\n${tables.map(renderTable).join("\n")}`);
  console.log(`saved ${file} (and latest.md beside it); ${seconds.toFixed(0)} s in all`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
