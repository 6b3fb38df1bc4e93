// A worker thread's CPU priority below its process's main thread: on a busy box the event loop every caller shares
// gets the cores first, and work handed to a worker (a hostile body's parse) waits instead of delaying everyone.
import { readlinkSync } from "node:fs";
import { getPriority, setPriority } from "node:os";

/** How much lower than the main thread (nice steps, 19 the lowest); this thread only. */
export const WORKER_NICENESS = 10;

/**
 * Lowers the calling thread's priority by `by` nice steps. Linux schedules threads apart and setpriority takes a
 * thread's id, which /proc/thread-self names; elsewhere (macOS, the agent's Mac) it does nothing and says so.
 */
export function lowerThisThread(by = WORKER_NICENESS): boolean {
  if (process.platform !== "linux") return false;
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (!Number.isInteger(tid) || tid === process.pid) return false;
    setPriority(tid, Math.min(19, getPriority(tid) + by));
    return true;
  } catch {
    // a container without /proc, or a policy that forbids it: the worker runs at its process's priority, as before
    return false;
  }
}
