// Remembers which files were already hashed, keyed by path + size + mtime, so a verified multi-GB model is
// not re-hashed on every load or restart. Optionally persisted as a small JSON file in the agent's data dir.
import { readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { sha256File, type OnBytes } from "../../src/crypto/sha256-node.ts";
import { PRIVATE_DIR_MODE } from "../../src/process/file-modes.ts";
import { makeDirs } from "../../src/process/make-dir.ts";

interface CachedHash {
  size: number;
  mtimeMs: number;
  sha256: string;
}

export class VerifiedFiles {
  private records = new Map<string, CachedHash>();
  /** How many files were actually read and hashed; tests use it to prove the cache is used. */
  hashCount = 0;

  constructor(private readonly persistPath?: string) {
    if (persistPath === undefined) return;
    try {
      const saved = JSON.parse(readFileSync(persistPath, "utf8")) as { [path: string]: CachedHash };
      for (const [path, record] of Object.entries(saved)) this.records.set(path, record);
    } catch {
      // no cache yet, or an unreadable one: start empty, it only costs a re-hash
    }
  }

  /** The file's SHA-256, from the cache when size and mtime are unchanged; `onBytes` hears a real hash's progress. */
  async sha256(path: string, onBytes?: OnBytes): Promise<string> {
    const { size, mtimeMs } = statSync(path);
    const known = this.records.get(path);
    if (known && known.size === size && known.mtimeMs === mtimeMs) return known.sha256;
    const sha256 = await sha256File(path, onBytes);
    this.hashCount++;
    this.remember(path, sha256);
    return sha256;
  }

  /** Records a hash computed elsewhere (a download hashes as it writes). */
  remember(path: string, sha256: string): void {
    const { size, mtimeMs } = statSync(path);
    this.records.set(path, { size, mtimeMs, sha256 });
    if (this.persistPath === undefined) return;
    // the agent's data dir, which holds its keys too
    makeDirs(dirname(this.persistPath), PRIVATE_DIR_MODE);
    const tmp = `${this.persistPath}.tmp`;
    writeFileSync(tmp, JSON.stringify(Object.fromEntries(this.records), null, 2));
    renameSync(tmp, this.persistPath);
  }
}
