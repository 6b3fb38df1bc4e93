// Owner-only modes for the gateway's data dir and the secrets in it: the dir is made 0700 and the key store
// 0600, and an existing dir or file that is looser (an older install, a copy) is tightened with one warning.
import { chmodSync, closeSync, existsSync, openSync } from "node:fs";
import { join } from "node:path";
import { octal, openMode, PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "../../src/process/file-modes.ts";
import { makeDirs } from "../../src/process/make-dir.ts";

export { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE };

/**
 * What the data dir holds that others must not read: the key store (key hashes, sessions) with SQLite's WAL
 * and shared-memory files beside it, the cookie secret, the gateway↔coordinator secret, a coordinator's directory key (NATS) and the auditor's key. test/e2e/file-modes.test.ts holds this list to
 * STORE_FILE, so renaming the store cannot silently drop it.
 */
export const PRIVATE_FILES = ["keys.sqlite", "keys.sqlite-wal", "keys.sqlite-shm", "session-secret", "gateway-secret", "directory-key", "audit-key"] as const;

type Warn = (line: string) => void;

/** Makes the data dir (0700) or tightens it and the private files already in it. Replaces a plain mkdir. */
export function makePrivateDataDir(dir: string, warn: Warn): void {
  makeDirs(dir, PRIVATE_DIR_MODE);
  tighten(dir, PRIVATE_DIR_MODE, warn);
  for (const name of PRIVATE_FILES) {
    const path = join(dir, name);
    if (existsSync(path)) tighten(path, PRIVATE_FILE_MODE, warn);
  }
}

/**
 * Creates the SQLite file 0600 before SQLite does (it would use 0644), and returns its path. SQLite gives
 * the -wal and -shm files it makes later the database file's mode, so they come out 0600 too.
 */
export function privateDatabaseFile(path: string): string {
  closeSync(openSync(path, "a", PRIVATE_FILE_MODE));
  return path;
}

/** Drops group and other bits only: a mode stricter than ours is the owner's choice and stays. */
function tighten(path: string, mode: number, warn: Warn): void {
  const current = openMode(path);
  if (current === undefined) return;
  const fixed = current & mode;
  chmodSync(path, fixed);
  warn(`${path} had mode ${octal(current)}, open to other users; changed it to ${octal(fixed)}`);
}
