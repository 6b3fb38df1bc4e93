// The code measurement of the transparent rung (DESIGN §4): one SHA-256 over the package's installed code
// files, so two installs of the same release measure the same and any edited file changes the figure.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { nodeSha256Hex } from "../crypto/sha256-node.ts";
import { PACKAGE_ROOT } from "../process/package-root.ts";

export { PACKAGE_ROOT };
/**
 * What runs: the sources (a clone) and the build (dist/, all an npm install has), the manifest and the pinned
 * catalog; those an install lacks (the sources, package-lock.json, which npm never packs) are left out.
 */
const CODE_DIRS = ["bin", "src", "agent", "gateway", "dist"];
const CODE_FILES = ["package.json", "package-lock.json", "models.lock.json"];

function codeFiles(root: string, dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return codeFiles(root, path);
    return /\.(ts|js|mjs|cjs)$/.test(entry.name) ? [path] : [];
  });
}

/** Lowercase hex SHA-256 over `path\0sha256(file)\n` for every code file, in sorted path order. */
export function measure(root: string = PACKAGE_ROOT): string {
  const present = (path: string) => existsSync(join(root, path));
  const files = [...CODE_DIRS.filter(present).flatMap((dir) => codeFiles(root, dir)), ...CODE_FILES.filter(present)].sort();
  const digest = createHash("sha256");
  for (const file of files) {
    const fileHash = nodeSha256Hex(readFileSync(join(root, file)));
    // forward slashes, so the figure does not depend on the platform
    digest.update(`${relative(root, join(root, file)).split(sep).join("/")}\0${fileHash}\n`);
  }
  return digest.digest("hex");
}
