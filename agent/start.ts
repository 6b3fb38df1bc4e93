// `svc-agent start`: loads (or creates) the provider's keys, works out which aliases it can serve and
// which rung evidence it holds, then keeps it connected to the coordinator.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { loadCatalog } from "../src/catalog.ts";
import { measure, PACKAGE_ROOT } from "../src/measure.ts";
import { loadManifest } from "../src/release-manifest.ts";
import { checkCoordinatorUrl } from "../src/ws-url.ts";
import { AgentDaemon } from "./daemon.ts";
import { Engine } from "./engine.ts";
import type { Faults } from "./faults.ts";
import { loadOrCreateKeys } from "./keys.ts";
import { memoryGb } from "./machine.ts";
import { ModelStore, parseModelOverrides } from "./model-store.ts";
import { VerifiedFiles } from "./verified-files.ts";

/** A release ships its signed manifest here; `--release-manifest` points elsewhere. */
export const BUNDLED_MANIFEST_PATH = join(PACKAGE_ROOT, "release-manifest.json");

export interface StartAgentOptions {
  coordinatorUrl: string;
  catalogPath?: string;
  models: string[];
  modelsDir: string;
  dataDir: string;
  memoryGb?: number;
  attestor?: string;
  releaseManifestPath?: string;
  name?: string;
  threads?: number;
  heartbeatMs: number;
  faults: Faults;
  log(line: string): void;
}

export interface RunningAgent {
  providerId: string;
  aliases: readonly string[];
  stop(): Promise<void>;
}

export async function startAgent(options: StartAgentOptions): Promise<RunningAgent> {
  const { log } = options;
  checkCoordinatorUrl(options.coordinatorUrl);
  const catalog = loadCatalog(options.catalogPath);
  const keys = await loadOrCreateKeys(options.dataDir);
  log(`${keys.created ? "created keys" : "loaded keys"} in ${options.dataDir}: provider ${keys.providerId}`);
  const store = new ModelStore({
    catalog,
    modelsDir: options.modelsDir,
    overrides: parseModelOverrides(catalog, options.models),
    verified: new VerifiedFiles(join(options.dataDir, "verified-models.json")),
  });
  const aliases = store.offered(memoryGb(options.memoryGb));
  if (aliases.length === 0) log(`no catalog model is present in ${options.modelsDir} and fits this machine; run svc-agent pull ALIAS`);
  const manifestPath = options.releaseManifestPath ?? (existsSync(BUNDLED_MANIFEST_PATH) ? BUNDLED_MANIFEST_PATH : undefined);
  const release = manifestPath === undefined ? undefined : { measurement: measure(), manifest: loadManifest(manifestPath) };
  const engine = new Engine({ store, threads: options.threads, log });
  const daemon = new AgentDaemon({
    coordinatorUrl: options.coordinatorUrl,
    keys,
    engine,
    store,
    aliases,
    name: options.name,
    attestor: options.attestor,
    release,
    faults: options.faults,
    heartbeatMs: options.heartbeatMs,
    log,
  });
  daemon.start();
  return {
    providerId: keys.providerId,
    aliases,
    stop: async () => {
      await daemon.stop();
      await engine.dispose();
    },
  };
}
