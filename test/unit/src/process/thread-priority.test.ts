// src/process/thread-priority.ts: a worker lowers its own thread's priority, and only its own.
import { getPriority } from "node:os";
import { describe, expect, it } from "vitest";
import { lowerThisThread, WORKER_NICENESS } from "../../../../src/process/thread-priority.ts";
import { startWorker } from "../../../../src/process/worker.ts";

/** Runs lowerThisThread in a fresh worker thread (lowered-worker.ts); answers what it returned and the thread's nice value after. */
function inWorker(): Promise<{ lowered: boolean; tid: number; nice: number }> {
  return new Promise((resolve, reject) => {
    const worker = startWorker(import.meta.url, "lowered-worker");
    worker.once("message", (m) => {
      resolve(m as { lowered: boolean; tid: number; nice: number });
      void worker.terminate();
    });
    worker.once("error", reject);
  });
}

describe("Worker threads yield the cores to the event loop (bench section 6b)", () => {
  it.runIf(process.platform === "linux")("a worker's own thread is lowered by WORKER_NICENESS steps; the main thread keeps its priority", async () => {
    const before = getPriority();
    const { lowered, tid, nice } = await inWorker();
    expect(lowered).toBe(true);
    expect(tid).not.toBe(process.pid);
    expect(nice).toBe(Math.min(19, before + WORKER_NICENESS));
    expect(getPriority()).toBe(before);
  });

  it("on the main thread it changes nothing", () => {
    const before = getPriority();
    expect(lowerThisThread()).toBe(false);
    expect(getPriority()).toBe(before);
  });
});
