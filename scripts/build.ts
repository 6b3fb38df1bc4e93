// `npm run build` (also on `prepare` and `prepack`): compiles the bins and what they import into dist/ with
// tsc, so an installed package runs plain JavaScript; the end-to-end tests and the bench run it too (their
// harness builds first, harness/build.ts), while `npm start` keeps running the sources. It also builds the client
// package (client/build.ts) into client/dist/, for `npm pack client/`, and into dist/client/: the package entry
// re-exports that bundle, and the tarball carries its browser.js.
// A dist/ built from the same inputs is kept as it is (scripts/build-inputs.ts); remove dist/ to build it anyway.
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, cpSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { buildClient, CLIENT_DIST } from "../client/build.ts";
import { buildInputsDigest, STAMP_FILE } from "./build-inputs.ts";

const ROOT = join(import.meta.dirname, "..");
const DIST = join(ROOT, "dist");
/** Built beside dist/ and swapped in when whole, so a process running dist/ meanwhile never sees half a build. */
const NEXT = join(ROOT, `dist.next-${process.pid}`);
/** The package entry's values: the client package's (index.d.ts re-exports client/public-types.d.ts, which declares them). */
const ENTRY = ["createSealedFetch", "RECEIPT_VERSION", "RECEIPT_VERSION_TOOLS", "verifyReceipt", "readSavedResponse", "verifySavedResponse", "decodeSavedBytes"];

const inputs = buildInputsDigest(ROOT);
const stamp = join(DIST, STAMP_FILE);
// on stderr, as below: `npm pack --json` runs this first and its stdout must stay JSON
if (existsSync(stamp) && readFileSync(stamp, "utf8") === inputs && existsSync(join(CLIENT_DIST, "index.js"))) {
  console.error(`${DIST} is current: built from these sources already`);
  process.exit(0);
}

rmSync(NEXT, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
// tsconfig.build.json: the sources' .ts imports rewritten to .js, declarations beside them
execFileSync(process.execPath, [tsc, "-p", join(ROOT, "tsconfig.build.json"), "--outDir", NEXT], { stdio: ["ignore", 2, 2] });

// the client package, bundled from the same sources: one artifact for its own tarball and this one's entry
await buildClient(join(NEXT, "client"));
rmSync(CLIENT_DIST, { recursive: true, force: true });
cpSync(join(NEXT, "client"), CLIENT_DIST, { recursive: true });
writeFileSync(
  join(NEXT, "index.js"),
  `// The package entry: the client package (createSealedFetch) and its offline receipt verifier (RECEIPTS.md); written by scripts/build.ts.\nexport { ${ENTRY.join(", ")} } from "./client/index.js";\n`,
);
// index.d.ts re-exports client/public-types.d.ts, whose import (../src/receipt/types.js) resolves to the declarations tsc emitted
copyFileSync(join(ROOT, "index.d.ts"), join(NEXT, "index.d.ts"));
copyFileSync(join(ROOT, "client", "public-types.d.ts"), join(NEXT, "client", "public-types.d.ts"));

for (const bin of ["svc-agent", "svc-gateway"]) {
  const path = join(NEXT, "bin", `${bin}.js`);
  if (!readFileSync(path, "utf8").startsWith("#!/usr/bin/env node\n")) throw new Error(`${path} lost its #! line`);
  chmodSync(path, 0o755);
}
// last, so a build that failed on the way leaves no stamp
writeFileSync(join(NEXT, STAMP_FILE), inputs);
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
