// An Ed25519 key kept as a 32-byte seed in hex in a data dir, made owner-only (0600) the first time it is asked for:
// a coordinator's directory key and a gateway's audit key both live this way.
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "./file-modes.ts";
import { makeDirs } from "./make-dir.ts";

/** The seed in `dataDir/name` (64 hex characters), made when there is none yet; throws naming the file when it is not one. */
export function seedFile(dataDir: string, name: string, what: string): string {
  makeDirs(dataDir, PRIVATE_DIR_MODE);
  const path = join(dataDir, name);
  try {
    writeFileSync(path, `${randomBytes(32).toString("hex")}\n`, { mode: PRIVATE_FILE_MODE, flag: "wx" });
  } catch (err) {
    // another process sharing the dir made it first: theirs is the one
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
  const seed = readFileSync(path, "utf8").trim();
  if (!/^[0-9a-f]{64}$/.test(seed)) throw new Error(`${path} is not ${what} (64 hex characters); move it away to make a new one`);
  return seed;
}
