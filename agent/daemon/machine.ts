// Facts about the machine the agent runs on: memory and physical cores, and the defaults they imply.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import os from "node:os";

const GIB = 1024 ** 3;

/** Total memory in GB (GiB, as `min_memory_gb` means it), unless `--memory-gb` says otherwise. */
export function memoryGb(override?: number): number {
  return override ?? os.totalmem() / GIB;
}

/** Physical cores: distinct (package, core) pairs on Linux, `hw.physicalcpu` on macOS, else logical CPUs. */
export function physicalCores(): number {
  try {
    if (process.platform === "linux") {
      const cores = new Set<string>();
      let pkg = "0";
      for (const line of readFileSync("/proc/cpuinfo", "utf8").split("\n")) {
        const [key, value] = line.split(":").map((s) => s.trim());
        if (key === "physical id") pkg = value ?? "0";
        if (key === "core id") cores.add(`${pkg}/${value}`);
      }
      if (cores.size > 0) return cores.size;
    } else if (process.platform === "darwin") {
      const n = Number(execFileSync("sysctl", ["-n", "hw.physicalcpu"], { encoding: "utf8" }).trim());
      if (Number.isInteger(n) && n > 0) return n;
    }
  } catch {
    // fall through to the logical count
  }
  return os.availableParallelism();
}

/**
 * Default llama.cpp CPU threads: the physical cores less one, kept for the agent's own event loop, which
 * drives every token. llama.cpp's worker threads spin while they wait, so oversubscribing a small machine
 * is ruinous: on the 2-core CI box the tiny model runs ~2,600 tokens/s on 1 thread and ~100 on 2.
 * On a Mac, Metal does the math and the CPU thread count barely matters.
 */
export function defaultThreads(cores = physicalCores()): number {
  return Math.max(1, cores - 1);
}
