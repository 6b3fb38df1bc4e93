// The client package (client/, svc-agent-client) as a caller installs it alone: `npm pack client/`, then `npm install`
// of the tarball into an empty project under os.tmpdir(), offline, every script ignored, with a cache of its own, so
// nothing can come from this clone's node_modules, its npm cache or the network. Its size is the README's figure
// (bench/startup.ts's install table; test/e2e/client-package.test.ts holds the README to it).
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { diskUsage } from "./install-size.ts";

export interface ClientInstall {
  /** The empty project it went into; `import("svc-agent-client")` from here finds it. */
  app: string;
  /** What `npm pack` put in the tarball, sorted. */
  packed: string[];
  /** The tarball's package.json. */
  manifest: Record<string, unknown>;
  /** Disk usage of the project's node_modules, in bytes, as `du` counts it. */
  bytes: number;
  /** The packages node_modules holds. */
  packages: string[];
}

function npm(args: string[], cwd: string, cache: string): string {
  const run = spawnSync(process.platform === "win32" ? "npm.cmd" : "npm", [...args, "--cache", cache], { cwd, encoding: "utf8" });
  if (run.status !== 0) throw new Error(`npm ${args.join(" ")} exited ${run.status}:\n${run.stderr}`);
  return run.stdout;
}

/** Packs `root`/client (whose dist/ `npm run build` made) and installs it alone into `dir`/app. */
export function installClientAlone(root: string, dir: string): ClientInstall {
  const cache = join(dir, "npm-cache");
  // npm 11 prints a list of packed packages, npm 12 an object keyed by name
  type Packed = { filename: string; files: { path: string }[] };
  const printed = JSON.parse(npm(["pack", join(root, "client"), "--json", "--pack-destination", dir], root, cache)) as Packed[] | Record<string, Packed>;
  const pack = (Array.isArray(printed) ? printed : Object.values(printed))[0]!;
  const app = join(dir, "app");
  mkdirSync(app);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true }));
  npm(["install", "--offline", "--ignore-scripts", "--no-audit", "--no-fund", join(dir, pack.filename)], app, cache);
  const modules = join(app, "node_modules");
  const packages = readdirSync(modules).filter((name) => !name.startsWith("."));
  return {
    app,
    packed: pack.files.map((f) => f.path).sort(),
    manifest: JSON.parse(readFileSync(join(modules, "svc-agent-client", "package.json"), "utf8")) as Record<string, unknown>,
    bytes: diskUsage(modules),
    packages,
  };
}
