// `npm run build` (scripts/build.ts) from the harness: the end-to-end tests and the bench run the compiled bins in
// dist/, so each run builds first. Unchanged sources leave dist/ as it is.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const BUILD = fileURLToPath(new URL("../scripts/build.ts", import.meta.url));

export function buildDist(): void {
  // its one line of output, and tsc's errors, on stderr
  execFileSync(process.execPath, ["--import", "tsx", BUILD], { stdio: ["ignore", "inherit", "inherit"] });
}
