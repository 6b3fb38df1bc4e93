// How every long-running svc process stops: the first SIGTERM or SIGINT shuts down gracefully (a service
// manager's stop, or Ctrl-C), a second one exits at once; and a process whose parent is gone stops as if
// signalled, so no server outlives the command that started it.
import { watchParent } from "./parent-watch.ts";

/** Returns the stop itself, for a process that must also stop on something else (a child that died). */
export function onShutdownSignal(close: () => Promise<void>): () => void {
  let stopping = false;
  const stop = () => {
    if (stopping) process.exit(1);
    stopping = true;
    void close().finally(() => process.exit(process.exitCode ?? 0));
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  const stopOnce = () => {
    if (!stopping) stop();
  };
  watchParent(stopOnce);
  return stopOnce;
}
