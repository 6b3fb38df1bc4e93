// `svc-agent doctor`'s run: every check in order, each reported as it is made; loaded only when doctor runs,
// so the other commands do not pay for llama.cpp, sealing and X.509 at start.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { loadCatalog } from "../../src/catalog-file.ts";
import { sealingKeyPair } from "../../src/crypto/seal.ts";
import { Signer } from "../../src/crypto/signing.ts";
import { keysPath, readKeys } from "../daemon/identity.ts";
import { memoryGb } from "../daemon/machine.ts";
import { ModelStore, parseModelOverrides } from "../models/store.ts";
import { downloadBar } from "../models/progress-bar.ts";
import type { StartFlags } from "../daemon/start-options.ts";
import { VerifiedFiles } from "../models/verified-files.ts";
import type { Check } from "./check.ts";
import { coordinatorChecks } from "./coordinator.ts";
import { diskCheck, fitCheck, keyModeChecks, llamaCheck, modelChecks, nodeCheck, servingCheck } from "./machine.ts";
import { attestorCheck, rungChecks } from "./rung.ts";

/** What `start` would be given (the same names), plus the anchors the coordinator would judge the rung by. */
export interface DoctorFlags extends Pick<StartFlags, "catalog" | "model" | "modelsDir" | "dataDir" | "memoryGb" | "attestor" | "releaseManifest" | "token"> {
  /** Every coordinator to check (start takes one). */
  coordinator: string[];
  releaseKeys?: string;
  roots?: string;
  json?: boolean;
}

export async function doctor(flags: DoctorFlags, report: (check: Check) => void): Promise<Check[]> {
  const checks: Check[] = [];
  const add = (...more: Check[]) => {
    for (const check of more) {
      checks.push(check);
      report(check);
    }
  };
  const catalog = loadCatalog(flags.catalog);
  const store = new ModelStore({
    catalog,
    modelsDir: flags.modelsDir,
    overrides: parseModelOverrides(catalog, flags.model),
    verified: new VerifiedFiles(join(flags.dataDir, "verified-models.json")),
  });
  add(nodeCheck(), await llamaCheck());
  const fit = fitCheck(catalog, memoryGb(flags.memoryGb));
  add(fit);
  // modes first: reading the keys below changes nothing, but start would tighten them
  add(...keyModeChecks(flags.dataDir));
  const fitting = (fit.data?.fit as string[] | undefined) ?? [];
  const models = await modelChecks(store, fitting, hashBar);
  add(...models, servingCheck(models, fitting));
  add(diskCheck(store, fitting.filter((alias) => !store.isPresent(alias))));
  const serving = models.filter((c) => c.ok).map((c) => c.id.slice("model:".length));
  for (const url of flags.coordinator) add(...(await coordinatorChecks(url, catalog, serving)));
  // no keys yet: judge the evidence with throwaway ones, as start will make the same kind
  const keys = existsSync(keysPath(flags.dataDir))
    ? await readKeys(keysPath(flags.dataDir))
    : { signer: Signer.fromSeed(randomBytes(32)), sealing: await sealingKeyPair(randomBytes(32)) };
  const trust = { keys, attestor: flags.attestor, releaseManifest: flags.releaseManifest, releaseKeys: flags.releaseKeys, roots: flags.roots, token: Boolean(flags.token) };
  const attested = await attestorCheck(trust);
  add(attested.check, ...(await rungChecks(trust, attested.chain)));
  return checks;
}

/** A progress bar while a multi-GB file is hashed, on a terminal only; started by the first bytes, so a cached hash shows none. */
function hashBar(alias: string, size: number) {
  if (!process.stderr.isTTY) return undefined;
  const bar = downloadBar(`hashing ${alias}`);
  let started = false;
  return {
    onBytes(done: number) {
      if (!started) bar.start(size, 0);
      started = true;
      bar.update(done);
    },
    stop() {
      if (started) bar.stop();
    },
  };
}
