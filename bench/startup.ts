// The bench's startup section: how long `svc-agent --help`, `svc-agent catalog` and `svc-gateway --help` take to
// run from the compiled bins (dist/, what npm installs) and from the sources through tsx, median of N runs; and what
// an install weighs on disk (install-size.ts), since that is the other half of what starting to use svc costs.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { installClientAlone } from "./client-install.ts";
import { installSize, type InstallSize } from "./install-size.ts";
import { percentile, type Table } from "./stats.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const COMMANDS: { label: string; bin: "svc-agent" | "svc-gateway"; args: string[] }[] = [
  { label: "svc-agent --help", bin: "svc-agent", args: ["--help"] },
  { label: "svc-agent catalog", bin: "svc-agent", args: ["catalog"] },
  { label: "svc-gateway --help", bin: "svc-gateway", args: ["--help"] },
];

export interface StartupRow {
  command: string;
  /** Median wall time, ms, of `node -e ""`: what node itself costs. */
  nodeMs: number;
  distMs: number;
  tsxMs: number;
}

/** Wall time of one run, ms; a run that fails stops the bench, since its time would mean nothing. */
function timeRun(args: string[]): number {
  const start = performance.now();
  const run = spawnSync(process.execPath, args, { cwd: ROOT, encoding: "utf8" });
  const ms = performance.now() - start;
  if (run.status !== 0) throw new Error(`node ${args.join(" ")} exited ${run.status}: ${run.stderr}`);
  return ms;
}

const median = (runs: number, args: string[]) => percentile(Array.from({ length: runs }, () => timeRun(args)), 50);

const MIB = 2 ** 20;

/** The client package installed alone (client-install.ts), in bytes on disk, and how many packages that is. */
function clientAlone(): { bytes: number; packages: number } {
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-client-"));
  try {
    const { bytes, packages } = installClientAlone(ROOT, dir);
    return { bytes, packages: packages.length };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function installTable(size: InstallSize, client: { bytes: number; packages: number }): Table {
  return {
    title: "Install size: node_modules on disk",
    columns: ["install", "packages", "MiB", "of which llama.cpp binaries, MiB"],
    rows: [
      ["this clone (npm install: dev dependencies too)", size.packages.all, size.all / MIB, size.llamaBinaries / MIB],
      ["a production install (npm install the package)", size.packages.production, size.production / MIB, size.llamaBinaries / MIB],
      ["the client alone (npm install svc-agent-client)", client.packages, client.bytes / MIB, 0],
    ],
    note:
      "Disk usage as `du` counts it, of this clone's node_modules; the production row is the packages package-lock.json does not mark dev, " +
      "as laid out here (the package itself adds about 3 MiB). node-llama-cpp's prebuilt llama.cpp binaries (`@node-llama-cpp/*`, CPU, CUDA and " +
      "Vulkan builds for this platform) are most of it. The client alone is client/'s tarball installed into an empty project offline, scripts ignored: " +
      "createSealedFetch and the receipt verifier, bundled with no dependency.",
  };
}

export function startupBench(quick: boolean): { rows: StartupRow[]; install: InstallSize & { clientAlone: { bytes: number; packages: number } }; tables: Table[] } {
  if (!existsSync(`${ROOT}/dist/bin/svc-agent.js`)) throw new Error("no dist/: run `npm run build` first (npm install runs it)");
  const runs = quick ? 5 : 15;
  const nodeMs = median(runs, ["-e", ""]);
  const rows = COMMANDS.map(({ label, bin, args }) => ({
    command: label,
    nodeMs,
    distMs: median(runs, [`dist/bin/${bin}.js`, ...args]),
    tsxMs: median(runs, [`bin/${bin}.js`, ...args]),
  }));
  const table: Table = {
    title: "Startup: compiled bins (dist/) against the sources through tsx",
    columns: ["command", "node -e '' ms", "dist ms", "tsx ms", "tsx / dist"],
    rows: rows.map((r) => [r.command, r.nodeMs, r.distMs, r.tsxMs, r.tsxMs / r.distMs]),
    note: `Median wall time of ${runs} runs each, a fresh node process per run; \`node -e ''\` is node's own start. ` +
      "An installed package, the end-to-end tests and the bench run dist/ (package.json `bin`); `npm start` runs the sources through tsx.",
  };
  const install = installSize(ROOT);
  const client = clientAlone();
  return { rows, install: { ...install, clientAlone: client }, tables: [table, installTable(install, client)] };
}
