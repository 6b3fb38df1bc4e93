// The e2e project's global setup: builds dist/ once, since the suites start the compiled bins, and gives every
// worker the run's pid file; its teardown fails the run if any child the harness started is still alive, and kills it.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { buildDist } from "../../harness/build.ts";
import { survivors } from "../../harness/registry.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** Where each worker's harness records the children it starts (harness/registry.ts). */
    harnessPids: string;
  }
}

export default function setup(project: TestProject): () => void {
  buildDist();
  const dir = mkdtempSync(join(tmpdir(), "svc-harness-"));
  const pids = join(dir, "pids");
  project.provide("harnessPids", pids);
  return () => {
    const left = survivors(pids);
    rmSync(dir, { recursive: true, force: true });
    if (left.length > 0) throw new Error(`left running after the run, killed now: ${left.join(", ")}`);
  };
}
