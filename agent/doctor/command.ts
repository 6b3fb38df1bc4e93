// `svc-agent doctor`: what a provider runs when something is wrong. Runs every check in order, prints one
// line each (✓ or ✗ with the fix) or, with --json, all of them as data; exits 0 only when the agent can serve.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Command, Option } from "commander";
import { loadCatalog } from "../../src/catalog.ts";
import { collect, httpUrl, positiveNumber } from "../../src/cli-options.ts";
import { DEFAULT_DATA_DIR } from "../../src/data-dir.ts";
import { sealingKeyPair } from "../../src/seal.ts";
import { Signer } from "../../src/signing.ts";
import { keysPath, readKeys } from "../keys.ts";
import { memoryGb } from "../machine.ts";
import { DEFAULT_MODELS_DIR, ModelStore, parseModelOverrides } from "../model-store.ts";
import { downloadBar } from "../progress-bar.ts";
import { VerifiedFiles } from "../verified-files.ts";
import { formatCheck, readyToServe, type Check } from "./check.ts";
import { coordinatorChecks } from "./coordinator.ts";
import { diskCheck, fitCheck, keyModeChecks, llamaCheck, modelChecks, nodeCheck, servingCheck } from "./machine.ts";
import { attestorCheck, rungChecks } from "./rung.ts";

interface DoctorFlags {
  coordinator: string[];
  catalog?: string;
  model: string[];
  modelsDir: string;
  dataDir: string;
  memoryGb?: number;
  attestor?: string;
  releaseManifest?: string;
  releaseKeys?: string;
  roots?: string;
  token?: string;
  json?: boolean;
}

export function addDoctorCommand(program: Command): void {
  program
    .command("doctor")
    .description("check everything the agent needs to serve, one line each with the fix; exit 0 only when it can serve")
    .option("--coordinator <url>", "a coordinator to check: reachable, same catalog, clock skew (repeatable)", (v: string, prev: string[]) => collect(httpUrl(v), prev), [])
    .option("--catalog <file>", "catalog file instead of the bundled models.lock.json")
    .option("--model <alias=path>", "this file for the alias, as start takes it (repeatable)", collect, [])
    .option("--models-dir <dir>", "where downloaded models live", DEFAULT_MODELS_DIR)
    .option("--data-dir <dir>", "the agent's state: keys and verified files", DEFAULT_DATA_DIR)
    .option("--memory-gb <n>", "memory to assume instead of this machine's", positiveNumber)
    .option("--attestor <cmd>", "the attestor start would run: it must run and its chain verify")
    .option("--release-manifest <file>", "the release manifest start would present")
    .option("--release-keys <file>", "the coordinator's trusted release keys, to check the transparent rung as it would")
    .option("--roots <dir>", "the coordinator's attestation roots, to check the hardware rung as it would")
    .addOption(new Option("--token <token>", "the enrollment token start would present (only whether one is set is checked)").env("SVC_PROVIDER_TOKEN"))
    .option("--json", "print {ready, checks: [...]} instead of lines")
    .action(async (flags: DoctorFlags) => {
      const checks = await doctor(flags, (check) => {
        if (!flags.json) console.log(formatCheck(check));
      });
      const ready = readyToServe(checks);
      if (flags.json) console.log(JSON.stringify({ ready, checks }, null, 2));
      else console.log(ready ? "ready to serve" : `not ready to serve: ${checks.filter((c) => !c.ok && c.needed).length} needed check(s) failed`);
      process.exitCode = ready ? 0 : 1;
    });
}

async function doctor(flags: DoctorFlags, report: (check: Check) => void): Promise<Check[]> {
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
