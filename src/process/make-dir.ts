// `mkdir -p` without Node's native recursive mkdir: on Node 20 that walk never ends for a path whose parent
// exists but cannot hold children (`/proc/nope`: ENOENT on the child, EEXIST on the parent, forever, a
// spinning core and no error), so every state dir is made here, one level at a time.
import { existsSync, mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";

/** Makes `dir` and any missing parents (new ones get `mode`); throws the first mkdir error, once. */
export function makeDirs(dir: string, mode = 0o777): void {
  const missing: string[] = [];
  for (let at = resolve(dir); !existsSync(at); at = dirname(at)) {
    missing.unshift(at);
    if (dirname(at) === at) break;
  }
  for (const path of missing) {
    try {
      mkdirSync(path, { mode });
    } catch (err) {
      // another process made it a moment ago: fine, as long as it is a directory
      if ((err as NodeJS.ErrnoException).code !== "EEXIST" || !isDir(path)) throw err;
    }
  }
  if (!isDir(dir)) throw Object.assign(new Error(`EEXIST: a file is in the way, mkdir '${dir}'`), { code: "EEXIST" });
}

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
