// `npm run build` (also on `prepare` and `prepack`): compiles the bins and what they import into dist/ with
// tsc, so an installed package runs plain JavaScript; the end-to-end tests and the bench run it too (their
// harness builds first, harness/build.ts), while `npm start` keeps running the sources.
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const ROOT = join(import.meta.dirname, "..");
const DIST = join(ROOT, "dist");
/** Built beside dist/ and swapped in when whole, so a process running dist/ meanwhile never sees half a build. */
const NEXT = join(ROOT, `dist.next-${process.pid}`);
/** The package entry's values; index.d.ts declares them, with the types from src/receipt/types.ts. */
const ENTRY = ["RECEIPT_VERSION", "RECEIPT_VERSION_TOOLS", "verifyReceipt", "readSavedResponse", "verifySavedResponse"];

rmSync(NEXT, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
// tsconfig.build.json: the sources' .ts imports rewritten to .js, declarations beside them
// on stderr: `npm pack --json` runs this first and its stdout must stay JSON
execFileSync(process.execPath, [tsc, "-p", join(ROOT, "tsconfig.build.json"), "--outDir", NEXT], { stdio: ["ignore", 2, 2] });

writeFileSync(
  join(NEXT, "index.js"),
  `// The package entry: the offline receipt verifier (RECEIPTS.md), src/receipt/index.ts; written by scripts/build.ts.\nexport { ${ENTRY.join(", ")} } from "./src/receipt/index.js";\n`,
);
// its imports (./src/receipt/types.js) resolve to the emitted declarations beside it
copyFileSync(join(ROOT, "index.d.ts"), join(NEXT, "index.d.ts"));

for (const bin of ["svc-agent", "svc-gateway"]) {
  const path = join(NEXT, "bin", `${bin}.js`);
  if (!readFileSync(path, "utf8").startsWith("#!/usr/bin/env node\n")) throw new Error(`${path} lost its #! line`);
  chmodSync(path, 0o755);
}
// a build of unchanged sources leaves dist/ alone: the tests run dist/ and measure it (src/trust/measure.ts) while
// test/e2e/package.test.ts's `npm pack` builds again, and between the two renames below there is no dist/
if (sameTree(NEXT, DIST)) {
  rmSync(NEXT, { recursive: true, force: true });
  console.error(`${DIST} is up to date`);
  process.exit(0);
}
const old = join(ROOT, `dist.old-${process.pid}`);
rmSync(old, { recursive: true, force: true });
try {
  renameSync(DIST, old);
} catch (err) {
  if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
}
renameSync(NEXT, DIST);
rmSync(old, { recursive: true, force: true });
console.error(`built ${DIST}`);

/** Whether two folders hold the same files with the same bytes and modes. */
function sameTree(a: string, b: string): boolean {
  if (!existsSync(b)) return false;
  const files = (dir: string) => readdirSync(dir, { recursive: true, encoding: "utf8" }).sort();
  const [left, right] = [files(a), files(b)];
  if (left.join("\0") !== right.join("\0")) return false;
  return left.every((f) => {
    const [x, y] = [statSync(join(a, f)), statSync(join(b, f))];
    if (x.isDirectory() || y.isDirectory()) return x.isDirectory() === y.isDirectory();
    return x.mode === y.mode && readFileSync(join(a, f)).equals(readFileSync(join(b, f)));
  });
}
