// Threads (issue: foundation): the default comes from the physical cores, less one for the event loop.
import { describe, expect, it } from "vitest";
import { defaultThreads, memoryGb, physicalCores } from "../../../../agent/daemon/machine.ts";

describe("machine facts", () => {
  it("default threads are the physical cores less one, at least one", () => {
    expect(defaultThreads(1)).toBe(1);
    expect(defaultThreads(2)).toBe(1);
    expect(defaultThreads(8)).toBe(7);
  });

  it("reads physical cores and memory, and --memory-gb overrides memory", () => {
    expect(physicalCores()).toBeGreaterThanOrEqual(1);
    expect(memoryGb()).toBeGreaterThan(0);
    expect(memoryGb(12)).toBe(12);
  });
});
