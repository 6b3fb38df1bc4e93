// Noticing that the process that started this one is gone. A child spawned with an IPC channel (npm start's
// agent) hears it close; under npm or npx, which may exit on SIGTERM without passing it on, the parent's pid is
// watched. Elsewhere (a shell, `nohup`, a service manager) a process is meant to outlive its parent: no watch.
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
  const parent = process.ppid;
  const timer = launchedByNpm(env) ? setInterval(() => !isAlive(parent) && once(), PARENT_POLL_MS) : undefined;
  timer?.unref();
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
