// Every child process the harness starts, so that none outlives its test run: the ones still running in this
// process are held here (stopLeftovers ends them), and each is also written to the run's pid file when one is set
// (recordPidsIn), which the run's global teardown reads to find any that outlived their worker (survivors).
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import type { ChildProcess } from "node:child_process";

export interface Child {
  child: ChildProcess;
  name: string;
  exited: Promise<void>;
}

const live = new Set<Child>();
let pidFile: string | undefined;

/** From now on, every child started in this process is also recorded in `file`. */
export function recordPidsIn(file: string): void {
  pidFile = file;
}

/** Holds `child` until it exits. */
export function register(child: Child): void {
  const pid = child.child.pid;
  if (pid === undefined) return;
  live.add(child);
  void child.exited.then(() => live.delete(child));
  const started = startTime(pid);
  if (pidFile && started !== "gone") appendFileSync(pidFile, `${pid} ${started} ${child.name.replaceAll("\n", " ")}\n`);
}

/** How long a leftover has after SIGTERM before SIGKILL. */
const GRACE_MS = 5_000;

/** Ends every child of this process that is still running (SIGTERM, SIGKILL after a grace); returns their names. */
export async function stopLeftovers(): Promise<string[]> {
  const left = [...live].filter(({ child }) => child.exitCode === null && child.signalCode === null);
  await Promise.all(
    left.map(async ({ child, exited }) => {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), GRACE_MS);
      await exited;
      clearTimeout(timer);
    }),
  );
  return left.map(({ child, name }) => `${name} (pid ${child.pid})`);
}

/** The children recorded in `file` that are still alive, whichever process started them; each is killed (SIGKILL). */
export function survivors(file: string): string[] {
  if (!existsSync(file)) return [];
  const found: string[] = [];
  for (const line of readFileSync(file, "utf8").split("\n").filter(Boolean)) {
    const [pid, started, ...name] = line.split(" ");
    // the same pid with another start time is a later process that reused the number
    const now = startTime(Number(pid));
    if (now === "gone" || now !== started) continue;
    found.push(`${name.join(" ")} (pid ${pid})`);
    try {
      process.kill(Number(pid), "SIGKILL");
    } catch {
      // gone meanwhile: it is still reported, it outlived its test
    }
  }
  return found;
}

/**
 * When the process `pid` started, from /proc/PID/stat field 22 (clock ticks since boot): with the pid, it names one
 * process. "gone" when there is no such process; "?" where there is no /proc (not Linux), where the pid alone is used.
 */
function startTime(pid: number): string {
  if (!existsSync("/proc/self/stat")) return alive(pid) ? "?" : "gone";
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // after the command name in parentheses, the fields from the third on: state, ..., starttime
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[0] === "Z" ? "gone" : (fields[19] ?? "gone");
  } catch {
    return "gone";
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
