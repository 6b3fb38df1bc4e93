// One agent per data dir: two agents on the same keys claim one provider id and knock each other off the
// coordinator every few hundred ms, forever. A lock file holding the pid keeps the second one out.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeDirs } from "../../src/process/make-dir.ts";
import { isAlive } from "../../src/process/parent-watch.ts";

export const LOCK_FILE = "agent.lock";

export interface DataDirLock {
  path: string;
  /** Removes the lock if it is still ours; also done on any exit of this process. */
  release(): void;
}

/**
 * Makes the data dir (0700) and takes its lock. A lock left by a process that is gone (killed, crashed,
 * the machine rebooted) is taken over. Two agents taking over one stale lock in the same millisecond could
 * both win; the re-read below narrows that to a window nobody hits by starting agents by hand.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  try {
    makeDirs(dataDir, 0o700);
  } catch (err) {
    throw new Error(`--data-dir ${dataDir}: cannot create it (${(err as Error).message})`);
  }
  const path = join(dataDir, LOCK_FILE);
  for (let tries = 0; ; tries++) {
    if (tryCreate(path, dataDir)) break;
    const holder = readPid(path);
    if (holder !== undefined && holder !== process.pid && isAlive(holder)) {
      throw new Error(`another svc-agent is using ${dataDir} (pid ${holder}); stop it first, or remove ${path} if that process is not an svc-agent`);
    }
    if (tries > 0) throw new Error(`--data-dir ${dataDir}: cannot take over the stale lock ${path}`);
    rmSync(path, { force: true }); // stale: its process is gone
  }
  if (readPid(path) !== process.pid) throw new Error(`another svc-agent is starting in ${dataDir} (pid ${readPid(path)})`);
  const release = () => {
    if (readPid(path) === process.pid) rmSync(path, { force: true });
  };
  process.once("exit", release);
  return { path, release };
}

/** Creates the lock with our pid; false when one is already there. */
function tryCreate(path: string, dataDir: string): boolean {
  try {
    writeFileSync(path, `${process.pid}\n`, { flag: "wx", mode: 0o600 });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw new Error(`--data-dir ${dataDir}: cannot write ${LOCK_FILE} there (${(err as Error).message})`);
  }
}

function readPid(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, "utf8").trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}
