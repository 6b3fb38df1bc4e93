// `svc-agent start`: loads (or creates) the provider's keys, works out which aliases it can serve and
// which rung evidence it holds, then keeps it connected to the coordinator.
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Catalog } from "../../src/catalog.ts";
import { loadCatalog } from "../../src/catalog-file.ts";
import { measure } from "../../src/trust/measure.ts";
import { loadManifest } from "../../src/trust/anchor-files.ts";
import { checkCoordinatorUrl } from "../../src/link/ws-url.ts";
import { AgentDaemon, type DaemonOptions } from "./coordinator-link.ts";
import { Engine } from "../engine/engine.ts";
import type { EngineStore, InferenceEngine } from "../engine/inference.ts";
import type { FaultInjection } from "./session-runner.ts";
import { lockDataDir } from "./data-dir-lock.ts";
import { BUNDLED_MANIFEST_PATH } from "./start-options.ts";
import { loadOrCreateKeys } from "./identity.ts";
import { memoryGb } from "./machine.ts";
import { ModelStore, parseModelOverrides } from "../models/store.ts";
import { SyntheticEngine } from "../engine/synthetic-engine.ts";
import { VerifiedFiles } from "../models/verified-files.ts";

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
  /** `--context-size`: tokens one session may hold (undefined: the engine's default). */
  contextSize?: number;
  /** `--prompt-cache-gb` (undefined: the default share) and `--prompt-cache-ttl`. */
  promptCache?: { gb?: number; ttlMs: number };
  heartbeatMs: number;
  /** `--token` / SVC_PROVIDER_TOKEN: the operator's enrollment token. */
  token?: string;
  faults?: FaultInjection;
  /** `--engine synthetic`: the benchmark engine instead of llama.cpp. */
  synthetic?: { tokens: number; tokenMs: number };
  log(line: string): void;
  /** Called once, when the agent first advertises: see DaemonOptions.ready. */
  ready?: DaemonOptions["ready"];
}

export interface RunningAgent {
  providerId: string;
  aliases: readonly string[];
  /** Leaves the directory, giving a running session up to `graceMs` to finish. */
  stop(graceMs?: number): Promise<void>;
}

export async function startAgent(options: StartAgentOptions): Promise<RunningAgent> {
  const { log } = options;
  checkCoordinatorUrl(options.coordinatorUrl);
  const catalog = loadCatalog(options.catalogPath);
  const lock = lockDataDir(options.dataDir);
  const keys = await loadOrCreateKeys(options.dataDir);
  log(`${keys.created ? "created keys" : "loaded keys"} in ${options.dataDir}: provider ${keys.providerId}`);
  const store = new ModelStore({
    catalog,
    modelsDir: options.modelsDir,
    overrides: parseModelOverrides(catalog, options.models),
    verified: new VerifiedFiles(join(options.dataDir, "verified-models.json")),
  });
  const { aliases, engine, release } = options.synthetic
    ? syntheticSetup(options, store, catalog)
    : {
        aliases: await pinnedAliases(store, options),
        engine: llamaEngine(options, store),
        release: releaseEvidence(options.releaseManifestPath),
      };
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
    token: options.token,
    log,
    ready: options.ready,
  });
  daemon.start();
  return {
    providerId: keys.providerId,
    aliases,
    stop: async (graceMs = 0) => {
      await daemon.stop(graceMs);
      await engine.dispose();
      lock.release();
    },
  };
}

/** The llama.cpp engine on the store's files (a test-only fault may build it on others: FaultInjection.engine). */
function llamaEngine(options: StartAgentOptions, store: ModelStore): InferenceEngine {
  const build = (files: EngineStore) =>
    new Engine({ store: files, threads: options.threads, contextSize: options.contextSize, memoryGb: options.memoryGb, promptCacheGb: options.promptCache?.gb, promptCacheTtlMs: options.promptCache?.ttlMs, log: options.log });
  return options.faults?.engine ? options.faults.engine(build, store) : build(store);
}

/** The aliases to advertise: present, fitting, and matching their pins (a first start hashes each file once). */
async function pinnedAliases(store: ModelStore, options: StartAgentOptions): Promise<string[]> {
  const { aliases, refused } = await store.pinnedOffered(memoryGb(options.memoryGb));
  for (const err of refused) options.log(`not advertising ${err.message}; svc-agent doctor says how to fix it`);
  if (aliases.length === 0 && refused.length === 0) options.log(`no catalog model is present in ${options.modelsDir} and fits this machine; run svc-agent pull ALIAS`);
  return aliases;
}

/** The transparent rung's evidence: this build's measurement and the manifest that lists it, if any. */
function releaseEvidence(manifestFlag: string | undefined) {
  const manifestPath = manifestFlag ?? (existsSync(BUNDLED_MANIFEST_PATH) ? BUNDLED_MANIFEST_PATH : undefined);
  return manifestPath === undefined ? undefined : { measurement: measure(), manifest: loadManifest(manifestPath) };
}

/**
 * The benchmark engine serves every catalog alias with no model file. Its receipts name files that never
 * ran, so it never presents rung evidence: a synthetic agent stays at `process`, below any real floor.
 */
function syntheticSetup(options: StartAgentOptions, store: ModelStore, catalog: Catalog) {
  if (options.attestor !== undefined || options.releaseManifestPath !== undefined) {
    throw new Error("--engine synthetic serves no model, so it cannot claim a rung: drop --attestor and --release-manifest");
  }
  const { tokens, tokenMs } = options.synthetic!;
  options.log(`benchmark engine: synthetic, ${tokens} tokens ${tokenMs > 0 ? `every ${tokenMs} ms` : "back to back"}, no model; rung process only`);
  return {
    aliases: catalog.models.map((m) => m.alias),
    engine: new SyntheticEngine({ tokens, tokenMs, sha256Of: (alias) => store.entry(alias).sha256 }),
    release: undefined,
  };
}
