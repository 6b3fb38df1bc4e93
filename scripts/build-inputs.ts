// What the build reads, as one SHA-256: every file under the folders tsconfig.build.json includes and under client/
// (but its dist/), the two tsconfigs, index.d.ts, the build scripts, TypeScript's version, and what the client's
// bundle takes in besides: the catalog, the licence and the lock that pins the bundled packages. dist/ keeps the digest it was built from, so a build whose
// inputs are unchanged has nothing to do: `npx svc-agent` in a clone installs the clone and runs `prepare` first.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";

/** Beside the build, in dist/: the digest of the inputs it was built from. */
export const STAMP_FILE = ".build-inputs";

const FILES = ["tsconfig.json", "tsconfig.build.json", "index.d.ts", "scripts/build.ts", "scripts/build-inputs.ts", "node_modules/typescript/package.json", "models.lock.json", "LICENSE", "package-lock.json"];
/** Bundled by client/build.ts rather than compiled by tsc; its dist/ is the build's output. */
const CLIENT = "client";

/** The top folders of tsconfig.build.json's `include` globs (`"src/**\/*.ts"` gives src). */
export function includedFolders(root: string): string[] {
  const config = readFileSync(join(root, "tsconfig.build.json"), "utf8");
  const include = /"include"\s*:\s*\[([^\]]*)\]/.exec(config)?.[1];
  if (include === undefined) throw new Error("tsconfig.build.json has no include list");
  return [...include.matchAll(/"([^"/*]+)\//g)].map((m) => m[1]!);
}

function filesUnder(root: string, dir: string): string[] {
  if (!existsSync(join(root, dir))) return [];
  return readdirSync(join(root, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(root, join(entry.parentPath, entry.name)));
}

/** Lowercase hex SHA-256 over each input's path and contents, in sorted path order; a file added or removed changes it too. */
export function buildInputsDigest(root: string): string {
  const client = filesUnder(root, CLIENT).filter((f) => !f.startsWith(join(CLIENT, "dist") + sep));
  const files = [...includedFolders(root).flatMap((dir) => filesUnder(root, dir)), ...client, ...FILES.filter((f) => existsSync(join(root, f)))].sort();
  const digest = createHash("sha256");
  for (const file of files) {
    const body = readFileSync(join(root, file));
    digest.update(`${file.split(sep).join("/")}\0${body.length}\0`).update(body);
  }
  return digest.digest("hex");
}
