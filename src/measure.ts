// The code measurement of the transparent rung (DESIGN §4): one SHA-256 over the package's installed code
// files, so two installs of the same release measure the same and any edited file changes the figure.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { sha256Hex } from "./hash.ts";

export const PACKAGE_ROOT = fileURLToPath(new URL("..", import.meta.url));
/** What runs: the entry shims and the package entry, the shared core, both roles, the manifest and the pinned catalog. */
const CODE_DIRS = ["bin", "src", "agent", "gateway"];
const CODE_FILES = ["index.js", "package.json", "package-lock.json", "models.lock.json"];

function codeFiles(root: string, dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return codeFiles(root, path);
    return /\.(ts|js|mjs|cjs)$/.test(entry.name) ? [path] : [];
  });
}

/** Lowercase hex SHA-256 over `path\0sha256(file)\n` for every code file, in sorted path order. */
export function measure(root: string = PACKAGE_ROOT): string {
  const files = [...CODE_DIRS.flatMap((dir) => codeFiles(root, dir)), ...CODE_FILES].sort();
  const digest = createHash("sha256");
  for (const file of files) {
    const fileHash = sha256Hex(readFileSync(join(root, file)));
    // forward slashes, so the figure does not depend on the platform
    digest.update(`${relative(root, join(root, file)).split(sep).join("/")}\0${fileHash}\n`);
  }
  return digest.digest("hex");
}
