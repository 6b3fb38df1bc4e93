// What an install of svc weighs on disk: this clone's node_modules (what `npm install` in a clone gives, the dev
// dependencies too) and the part of it a production install of the package gets (the packages package-lock.json does
// not mark dev, as npm lays them out on this platform, which is how test/e2e/package.test.ts installs the tarball),
// with node-llama-cpp's prebuilt llama.cpp binaries apart, since they are most of it. Sizes are disk usage (blocks),
// as `du` reports them.
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";

export interface InstallSize {
  /** Everything under node_modules, in bytes on disk. */
  all: number;
  /** The packages a production install holds (not marked dev in package-lock.json). */
  production: number;
  /** Of those, node-llama-cpp's prebuilt binaries (`@node-llama-cpp/*`). */
  llamaBinaries: number;
  /** How many packages each holds. */
  packages: { all: number; production: number };
}

/** The package a file under node_modules belongs to: the deepest `node_modules/[@scope/]name` on its path. */
const packageOf = (path: string): string | undefined => /^(.*node_modules\/(?:@[^/]+\/)?[^/@.][^/]*)/.exec(path)?.[1];

/** Calls `visit` with each file and folder under `dir` (not following links) and its disk usage in bytes. */
function walk(dir: string, visit: (path: string, bytes: number) => void): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    visit(path, lstatSync(path).blocks * 512);
    if (entry.isDirectory()) walk(path, visit);
  }
}

/** Disk usage of everything under `dir`, in bytes, as `du` counts it. */
export function diskUsage(dir: string): number {
  let bytes = 0;
  walk(dir, (_, b) => (bytes += b));
  return bytes;
}

export function installSize(root: string): InstallSize {
  const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as { packages: Record<string, { dev?: boolean }> };
  const size: InstallSize = { all: 0, production: 0, llamaBinaries: 0, packages: { all: 0, production: 0 } };
  const seen = new Set<string>();
  walk(join(root, "node_modules"), (path, bytes) => {
    size.all += bytes;
    const pkg = packageOf(relative(root, path).split(sep).join("/"));
    const production = pkg !== undefined && lock.packages[pkg] !== undefined && lock.packages[pkg].dev !== true;
    if (pkg !== undefined && lock.packages[pkg] !== undefined && !seen.has(pkg)) {
      seen.add(pkg);
      size.packages.all++;
      if (production) size.packages.production++;
    }
    if (production) size.production += bytes;
    if (production && pkg!.startsWith("node_modules/@node-llama-cpp/")) size.llamaBinaries += bytes;
  });
  return size;
}
