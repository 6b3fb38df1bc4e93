// `svc-agent doctor`'s checks of this machine: Node, the llama.cpp backend and the memory it sees, which
// catalog models fit, their files against their pins, free disk for the missing ones, the keys' file modes.
import { existsSync, statfsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Catalog } from "../../src/catalog.ts";
import { octal, openMode } from "../../src/process/file-modes.ts";
import { nodeSupported, SUPPORTED_NODE_TEXT } from "../../src/process/node-support.ts";
import type { OnBytes } from "../../src/crypto/sha256-node.ts";
import { keysPath } from "../daemon/identity.ts";
import { ModelFileError, type ModelStore } from "../models/store.ts";
import { pullCommand } from "../models/pull-command.ts";
import { fail, gb, pass, type Check } from "./check.ts";

export function nodeCheck(version = process.versions.node): Check {
  return nodeSupported(version)
    ? pass("node", `Node ${version} (svc runs on Node ${SUPPORTED_NODE_TEXT})`)
    : fail("node", `Node ${version} is not supported (svc runs on Node ${SUPPORTED_NODE_TEXT})`, "install Node 24, the active LTS (nodejs.org, or: nvm install 24)");
}

/** The backend node-llama-cpp picks with `gpu: "auto"`, as the engine asks for it, and the memory it sees. */
export async function llamaCheck(): Promise<Check> {
  // imported here: the native binding's load is most of doctor's time and only this check needs it
  const { getLlama, LlamaLogLevel } = await import("node-llama-cpp");
  let llama;
  try {
    // build "never": doctor reports what is there instead of compiling llama.cpp for minutes
    llama = await getLlama({ gpu: "auto", build: "never", logLevel: LlamaLogLevel.error });
  } catch (err) {
    return fail("llama", `llama.cpp cannot load: ${firstLine(err)}`, "reinstall with npm ci; on an unusual platform let node-llama-cpp build it: npx --no node-llama-cpp source download");
  }
  try {
    const vram = await llama.getVramState();
    const backend = llama.gpu === false ? "CPU" : { metal: "Metal", cuda: "CUDA", vulkan: "Vulkan" }[llama.gpu];
    const memory = llama.gpu === false ? "no GPU" : `GPU memory ${gb(vram.total)} (${gb(vram.free)} free)${vram.unifiedSize > 0 ? `, ${gb(vram.unifiedSize)} unified with system memory` : ""}`;
    const data = { backend, gpu: llama.gpu, vram_total: vram.total, vram_free: vram.free, unified_size: vram.unifiedSize };
    if (process.platform === "darwin" && process.arch === "arm64" && llama.gpu !== "metal") {
      return fail("llama", `llama.cpp backend: ${backend} on Apple silicon, ${memory}`, "Metal was not picked: reinstall node-llama-cpp (npm ci) on macOS 13 or later", { needed: false, data });
    }
    return pass("llama", `llama.cpp backend: ${backend}, ${memory}`, data);
  } finally {
    await llama.dispose();
  }
}

export function fitCheck(catalog: Catalog, memoryGb: number): Check {
  const fits = catalog.models.filter((m) => m.min_memory_gb <= memoryGb).map((m) => m.alias);
  const big = catalog.models.filter((m) => m.min_memory_gb > memoryGb);
  const data = { memory_gb: memoryGb, fit: fits, too_big: big.map((m) => m.alias) };
  const tooBig = big.length === 0 ? "" : `; too big: ${big.map((m) => `${m.alias} (needs ${m.min_memory_gb} GB)`).join(", ")}`;
  if (fits.length === 0) {
    return fail("fit", `no catalog model fits ${memoryGb.toFixed(1)} GB of memory${tooBig}`, "serve from a machine with more memory", { data });
  }
  return pass("fit", `fit in ${memoryGb.toFixed(1)} GB of memory: ${fits.join(", ")}${tooBig}`, data);
}

/** Each fitting alias's file: present, right size, SHA-256 equal to its pin. Missing ones are only a lost model. */
export async function modelChecks(store: ModelStore, aliases: readonly string[], progress: (alias: string, size: number) => { onBytes: OnBytes; stop(): void } | undefined): Promise<Check[]> {
  const checks: Check[] = [];
  for (const alias of aliases) {
    const path = store.pathFor(alias);
    const pin = store.entry(alias).sha256;
    const pull = pullCommand(store, alias);
    if (!existsSync(path)) {
      const fix = pull ?? `put the file this catalog pins for ${alias} at ${path}, or pass --model ${alias}=PATH`;
      checks.push(fail(`model:${alias}`, `${alias}: not downloaded (${path})`, fix, { needed: false, data: { path, present: false } }));
      continue;
    }
    const bar = progress(alias, store.entry(alias).size_bytes);
    try {
      await store.verify(alias, bar?.onBytes);
      checks.push({ ...pass(`model:${alias}`, `${alias}: ${path} matches its pin (sha256 ${pin.slice(0, 12)}…)`), needed: false, data: { path, present: true, sha256: pin } });
    } catch (err) {
      if (!(err instanceof ModelFileError)) throw err;
      const fix = pull ? `delete ${path} and run ${pull}` : `replace ${path} with the file this catalog pins for ${alias}`;
      checks.push(fail(`model:${alias}`, err.message, fix, { needed: false, data: { path, present: true } }));
    } finally {
      bar?.stop();
    }
  }
  return checks;
}

/** The agent serves when at least one model is present, verified and fits. */
export function servingCheck(modelChecks: readonly Check[], fitting: readonly string[]): Check {
  const ready = modelChecks.filter((c) => c.ok).map((c) => c.id.slice("model:".length));
  if (ready.length > 0) return pass("serving", `ready to serve: ${ready.join(", ")}`, { aliases: ready });
  // the first fitting model's fix, which says how to get it
  const fix = modelChecks.find((c) => c.id === `model:${fitting[0]}`)?.fix ?? "serve from a machine with more memory";
  return fail("serving", "no model to serve", fix, { data: { aliases: [] } });
}

/** Free space where the missing models would go. */
export function diskCheck(store: ModelStore, missing: readonly string[]): Check {
  let at = resolve(store.modelsDir);
  while (!existsSync(at) && dirname(at) !== at) at = dirname(at);
  const stats = statfsSync(at);
  const free = stats.bavail * stats.bsize;
  const need = missing.reduce((sum, alias) => sum + store.entry(alias).size_bytes, 0);
  const data = { path: at, free_bytes: free, missing_bytes: need };
  if (missing.length === 0) return { ...pass("disk", `free disk: ${gb(free)} at ${at}`, data), needed: false };
  const line = `free disk: ${gb(free)} at ${at}, ${missing.join(", ")} need ${gb(need)}`;
  return free >= need ? { ...pass("disk", line, data), needed: false } : fail("disk", line, `free ${gb(need - free)} or pull fewer models`, { needed: false, data });
}

/** The data dir 0700 and the key file 0600: anyone who reads the keys can sign receipts as this provider. */
export function keyModeChecks(dataDir: string): Check[] {
  const file = keysPath(dataDir);
  if (!existsSync(file)) return [{ ...pass("keys", `no keys in ${dataDir} yet: start creates them (mode 0600)`), needed: false }];
  const checks: Check[] = [];
  for (const [path, want] of [[dataDir, "700"], [file, "600"]] as const) {
    const open = openMode(path);
    checks.push(
      open === undefined
        ? { ...pass(`mode:${path}`, `${path} is private to its owner`), needed: false }
        : fail(`mode:${path}`, `${path} has mode ${octal(open)}, readable by other users`, `chmod ${want} ${path}`, { needed: false }),
    );
  }
  return checks;
}

const firstLine = (err: unknown) => ((err as Error).message ?? String(err)).split("\n")[0];
