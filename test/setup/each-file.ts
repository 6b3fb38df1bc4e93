// Runs in each e2e suite's worker: the harness records its children in the run's pid file, and after the suite
// any child still running is stopped, and the suite fails naming it, even when a beforeAll threw before the
// suite's own afterAll could stop what it had started.
import { afterAll, inject } from "vitest";
import { recordPidsIn, stopLeftovers } from "../../harness/registry.ts";

recordPidsIn(inject("harnessPids"));

afterAll(async () => {
  const left = await stopLeftovers();
  if (left.length > 0) throw new Error(`left running by this suite, stopped now: ${left.join(", ")}`);
});
