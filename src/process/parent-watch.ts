// Noticing that the process that started this one is gone. A child spawned with an IPC channel (npm start's
// agent) hears it close; under npm or npx, which may exit on SIGTERM without passing it on, the parent's pid is
// watched, and npm's own above the shell it runs scripts in. Elsewhere (a shell, `nohup`, a service manager) a
// process is meant to outlive its parent: no watch.
import { readFileSync } from "node:fs";
import process from "node:process";

/** How often the parent's pid is read under npm: a stop within about a second of the wrapper's. */
export const PARENT_POLL_MS = 1_000;

/** Whether npm (npm start, npm run, npx) started this process or an ancestor: it sets npm_command. */
export const launchedByNpm = (env: NodeJS.ProcessEnv): boolean => env.npm_command !== undefined;

/** Calls `onGone` once when the parent is gone; never keeps the process alive by itself. */
export function watchParent(onGone: () => void, env: NodeJS.ProcessEnv = process.env): void {
  let gone = false;
  const once = () => {
    if (gone) return;
    gone = true;
    clearInterval(timer);
    onGone();
  };
  if (process.channel !== undefined) {
    process.once("disconnect", once);
    process.channel.unref();
  } else if (process.send !== undefined) {
    // spawned with a channel that closed before this watch began
    setImmediate(once);
  }
  // process.ppid is read once at start, so the parent is asked directly: signal 0 tests that it still exists
  const watched = launchedByNpm(env) ? npmAncestors(process.ppid) : [];
  const timer = watched.length > 0 ? setInterval(() => !watched.every(isAlive) && once(), PARENT_POLL_MS) : undefined;
  timer?.unref();
}

/**
 * The processes whose end means npm is gone: the parent, and when the parent is the shell npm runs scripts in
 * (`sh -c`), npm above it too, since a SIGKILLed npm leaves that shell waiting on this process. The grandparent is
 * read from /proc (Linux); elsewhere only the parent is watched.
 */
export function npmAncestors(parent: number, read: (pid: number, field: "comm" | "stat") => string | undefined = procField): number[] {
  const shell = /^(sh|dash|bash)$/.test(read(parent, "comm")?.trim() ?? "");
  const stat = shell ? read(parent, "stat") : undefined;
  // "pid (comm) state ppid …": comm may hold spaces and parentheses, so the fields are counted from its last ")"
  const npm = stat === undefined ? NaN : Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  return Number.isInteger(npm) && npm > 1 ? [parent, npm] : [parent];
}

function procField(pid: number, field: "comm" | "stat"): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/${field}`, "utf8");
  } catch {
    return undefined;
  }
}

/** Signal 0 checks existence only; EPERM means it exists but belongs to another user. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
