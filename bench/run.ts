// `npm run bench [-- --quick] [-- --only overhead,scale,engine,peer,startup,attack,agent]`: measures the gateway path against
// the direct path, throughput and scale against synthetic agents, our engine against raw node-llama-cpp, svc
// next to a peer gateway, the bins' startup compiled against through tsx, and an honest caller beside a
// hostile-schema attack, and an agent's growing conversation, all in one run on this machine;
// prints the tables and saves them as JSON and Markdown in bench/results/local/ (ignored by git), or in --out DIR:
// `--out bench/results` records a run beside the ones bench/README.md cites.
import { Command } from "commander";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildDist } from "../harness/build.ts";
import { agentBench } from "./agent-turns.ts";
import { attackBench } from "./attack.ts";
import { makeDirs } from "../src/process/make-dir.ts";
import { writeTinyCatalog } from "../tiny-model/catalog.ts";
import { engineBench } from "./engine-bench.ts";
import { gatewayOverhead } from "./overhead.ts";
import { peerBench } from "./peer.ts";
import { profileInto } from "./procs.ts";
import { scaleBench } from "./scale.ts";
import { startupBench } from "./startup.ts";
import { renderTable, type Table } from "./stats.ts";

const SECTIONS = ["overhead", "scale", "engine", "peer", "startup", "attack", "agent"] as const;
type Section = (typeof SECTIONS)[number];

const opts = new Command("npm run bench")
  .option("--quick", "fewer samples and steps: under a minute")
  .option("--only <sections>", `comma-separated subset of ${SECTIONS.join(",")}`)
  .option("--agents <counts>", "scale section: only these agent counts, comma-separated (e.g. 100,1000); skips the streams step")
  .option("--cpu-prof <dir>", "write a V8 CPU profile of every gateway, coordinator and agent process into this folder")
  .option("--out <dir>", "save the results here (bench/results to record them with the README's)", fileURLToPath(new URL("./results/local/", import.meta.url)))
  .parse()
  .opts<{ quick?: boolean; only?: string; cpuProf?: string; agents?: string; out: string }>();

if (opts.cpuProf) profileInto(opts.cpuProf);
// every section runs the compiled bins (dist/), as installed; unchanged sources leave dist/ as it is
buildDist();

const only = new Set((opts.only ?? SECTIONS.join(",")).split(",") as Section[]);
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
  if (only.has("overhead")) {
    const overhead = await gatewayOverhead(dir, tiny, quick);
    results.overhead = overhead.rows;
    print(overhead.tables);
  }
  if (only.has("scale")) {
    const scale = await scaleBench(dir, tiny, quick, opts.agents?.split(",").map(Number));
    results.scale = scale.results;
    print(scale.tables);
  }
  if (only.has("engine")) {
    const engine = await engineBench(dir, tiny, quick);
    results.engine = engine.results;
    print(engine.tables);
  }
  if (only.has("peer")) {
    const peer = await peerBench(dir, tiny, quick);
    results.peer = { peer: peer.peer, rows: peer.rows };
    print(peer.tables);
  }
  if (only.has("startup")) {
    const startup = startupBench(quick);
    results.startup = startup.rows;
    print(startup.tables);
  }
  if (only.has("attack")) {
    const attack = await attackBench(dir, tiny, quick);
    results.attack = attack.rows;
    print(attack.tables);
  }
  if (only.has("agent")) {
    const agent = await agentBench(dir, tiny, quick);
    results.agent = agent.rows;
    print(agent.tables);
  }
  const seconds = (Date.now() - started.getTime()) / 1000;
  const resultsDir = opts.out;
  makeDirs(resultsDir);
  const stamp = started.toISOString().replace(/[:.]/g, "-");
  const record = { date: started.toISOString(), quick, seconds, machine: { cores: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version }, results, tables };
  const file = join(resultsDir, `${stamp}${quick ? "-quick" : ""}.json`);
  writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`);
  writeFileSync(join(resultsDir, "latest.md"), `Run ${started.toISOString()}${quick ? " (quick)" : ""}, ${seconds.toFixed(0)} s\n\n${tables.map(renderTable).join("\n")}`);
  console.log(`saved ${file} (and latest.md beside it); ${seconds.toFixed(0)} s in all`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
