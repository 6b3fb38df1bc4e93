// Noticing that the process that started this one is gone. A child spawned with an IPC channel (npm start's
// agent) hears it close; under npm or npx, which may exit on SIGTERM without passing it on, the parent's pid is
// watched, and npm's own above the shell it runs scripts in. Elsewhere (a shell, `nohup`, a service manager) a
// process is meant to outlive its parent: no watch.
import { readFileSync } from "node:fs";
import process from "node:process";

/** How often the parent's pid is read under npm: a stop within about a second of the wrapper's. */
export const PARENT_POLL_MS = 1_000;

/**
 * The parent this process started under, read as this module loads (among a bin's first imports, before any await).
 * Read at the watch instead, a parent that died while the process was still starting (npx killed right after the
 * ready line, on a loaded machine) would read as init, which never ends: a CI run left such a gateway serving.
 */
const STARTING_PARENT = process.ppid;

/** Whether npm (npm start, npm run, npx) started this process or an ancestor: it sets npm_command. */
export const launchedByNpm = (env: NodeJS.ProcessEnv): boolean => env.npm_command !== undefined;

/** Calls `onGone` once when the parent is gone; never keeps the process alive by itself. */
export function watchParent(onGone: () => void, env: NodeJS.ProcessEnv = process.env): void {
  let gone = false;
  const once = () => {
    if (gone) return;
    gone = true;
    stopPidWatch();
    onGone();
  };
  if (process.channel !== undefined) {
    process.once("disconnect", once);
    process.channel.unref();
  } else if (process.send !== undefined) {
    // spawned with a channel that closed before this watch began
    setImmediate(once);
  }
  const stopPidWatch = watchNpmParent(once, env);
}

/**
 * Under npm, polls the parent this process started under (and npm above its shell) until one is gone, then calls
 * `onGone`, at once if it already is; returns what ends the watch. Never keeps the process alive by itself.
 */
export function watchNpmParent(onGone: () => void, env: NodeJS.ProcessEnv, parent = STARTING_PARENT): () => void {
  const watched = launchedByNpm(env) ? npmAncestors(parent) : [];
  if (watched.length === 0) return () => {};
  // signal 0 tests that each still exists; a process given to another parent (init, a subreaper) has lost its own
  const gone = () => process.ppid !== parent || !watched.every(isAlive);
  const timer = setInterval(() => gone() && onGone(), PARENT_POLL_MS);
  timer.unref();
  const early = gone() ? setImmediate(onGone) : undefined;
  return () => {
    clearInterval(timer);
    if (early !== undefined) clearImmediate(early);
  };
}

/**
 * Under npm through a shell (`npx svc-agent start`, or a package script that runs a bin), a SIGINT sent to npm's pid
 * stops nothing: npm passes it only to the `sh -c` it runs the command in, and that shell (Debian's dash) waits on its
 * child without passing it on. Nothing here can hear it (a terminal's Ctrl-C reaches the whole process group, so it
 * works). What to tell whoever started the process, or undefined when the signal does reach it.
 */
export function npmSignalNote(env: NodeJS.ProcessEnv = process.env, parent = STARTING_PARENT, read = procField): string | undefined {
  if (!launchedByNpm(env)) return undefined;
  const [shell, npm] = npmAncestors(parent, read);
  if (npm === undefined) return undefined;
  return `npm runs this in a shell (pid ${shell}) that keeps a SIGINT sent to npm's pid (${npm}) from it: to stop it from a script, send SIGTERM (kill ${npm}) or signal the process group, as Ctrl-C does`;
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
