// How every long-running svc process stops: the first SIGTERM or SIGINT shuts down gracefully (a service
// manager's stop, or Ctrl-C), a second one exits at once; and a process whose parent is gone stops as if
// signalled, so no server outlives the command that started it.
import { npmSignalNote, watchParent } from "./parent-watch.ts";

/**
 * A second signal this soon after the first is the same stop, not a second request: a terminal's Ctrl-C reaches
 * every process of its group at once (npm, `npm start`'s script and its agent), and then npm passes its own copy on
 * to the script, and the script asks its agent to stop. A person asking again, later, still means "now".
 */
export const SAME_STOP_MS = 1_000;

/**
 * Returns the stop itself, for a process that must also stop on something else (a child that died). `say` hears how to
 * stop this process when a SIGINT to the pid that started it cannot (npm through a shell: npmSignalNote).
 */
export function onShutdownSignal(close: () => Promise<void>, say?: (line: string) => void): () => void {
  let stoppingSince: number | undefined;
  const stop = () => {
    if (stoppingSince !== undefined) {
      if (performance.now() - stoppingSince >= SAME_STOP_MS) process.exit(1);
      return;
    }
    stoppingSince = performance.now();
    void close().finally(() => process.exit(process.exitCode ?? 0));
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  const stopOnce = () => {
    if (stoppingSince === undefined) stop();
  };
  watchParent(stopOnce);
  const note = say && npmSignalNote();
  if (note !== undefined) say!(note);
  return stopOnce;
}
