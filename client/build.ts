// The client package's build (svc-agent-client, issue 42): esbuild bundles client/index.ts with all it imports, so the
// package has no runtime dependency and every runtime runs the one tested artifact: dist/index.js (platform-neutral
// ESM, unminified, for Node, Deno and Bun), dist/browser.js (the same graph, minified), the hand-written types
// (public-types.d.ts, with src/receipt/types.ts beside it), svc's LICENSE and each bundled package's licence, listed
// from esbuild's metafile. scripts/build.ts runs it (`npm run build`); alone: `node --import tsx client/build.ts [OUT]`.
import { build, type BuildOptions, type Metafile } from "esbuild";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = join(import.meta.dirname, "..");
const ENTRY = join(import.meta.dirname, "index.ts");
/** Where `npm pack client/` finds the build (package.json `files`). */
export const CLIENT_DIST = join(import.meta.dirname, "dist");
/** The one import public-types.d.ts makes, and where it points once shipped. */
const TYPES_IMPORT = '"../src/receipt/types.js"';
const SHIPPED_TYPES = "receipt-types.d.ts";

/** Writes the client package's dist/ files into `out` (emptied first). */
export async function buildClient(out: string): Promise<void> {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const common: BuildOptions & { metafile: true } = { entryPoints: [ENTRY], bundle: true, metafile: true, format: "esm", target: ["es2022"], logLevel: "silent", legalComments: "none" };
  // neutral: no runtime's built-ins are assumed, so a node: import anywhere in the graph fails the build
  const neutral = await build({ ...common, platform: "neutral", mainFields: ["module", "main"], outfile: join(out, "index.js") });
  const browser = await build({ ...common, platform: "browser", minify: true, outfile: join(out, "browser.js") });

  const types = readFileSync(join(import.meta.dirname, "public-types.d.ts"), "utf8");
  if (types.split(TYPES_IMPORT).length !== 3) throw new Error(`client/public-types.d.ts should import its receipt types from ${TYPES_IMPORT} twice (import and export)`);
  writeFileSync(join(out, "index.d.ts"), types.replaceAll(TYPES_IMPORT, `"./${SHIPPED_TYPES.replace(/\.d\.ts$/, ".js")}"`));
  copyFileSync(join(ROOT, "src", "receipt", "types.ts"), join(out, SHIPPED_TYPES));
  copyFileSync(join(ROOT, "LICENSE"), join(out, "LICENSE"));
  writeFileSync(join(out, "THIRD-PARTY-LICENSES.txt"), thirdPartyLicenses([neutral.metafile, browser.metafile]));
}

/** Each package a bundle took code from: its name, version, licence and LICENSE text; a package without one fails the build. */
export function thirdPartyLicenses(metafiles: Metafile[]): string {
  const dirs = new Set<string>();
  for (const meta of metafiles) {
    for (const input of Object.keys(meta.inputs)) {
      const dir = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input)?.[1];
      if (dir !== undefined) dirs.add(dir);
    }
  }
  const sections = [...dirs].map((dir) => {
    const pkg = JSON.parse(readFileSync(join(ROOT, dir, "package.json"), "utf8")) as { name: string; version: string; license?: string };
    const file = readdirSync(join(ROOT, dir)).find((f) => /^licen[cs]e(\.(md|txt))?$/i.test(f));
    if (file === undefined) throw new Error(`${dir} has no LICENSE file to ship with the client's bundle`);
    return `${pkg.name}@${pkg.version} (${pkg.license ?? "see below"})\n\n${readFileSync(join(ROOT, dir, file), "utf8").trim()}\n`;
  });
  const header = "svc-agent-client bundles code from these packages, each under the licence that follows its name.\n";
  return [header, ...sections.sort()].join(`\n${"-".repeat(80)}\n\n`);
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const out = process.argv[2] === undefined ? CLIENT_DIST : resolve(process.argv[2]);
  await buildClient(out);
  if (!existsSync(join(out, "index.js"))) throw new Error(`no ${out}/index.js`);
  console.error(`built ${out}`);
}
