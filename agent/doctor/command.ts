// `svc-agent doctor`: what a provider runs when something is wrong. Runs every check in order, prints one
// line each (✓ or ✗ with the fix) or, with --json, all of them as data; exits 0 only when the agent can serve.
import { Command, Option } from "commander";
import { collect, httpUrl, positiveNumber } from "../../src/process/cli-options.ts";
import { DEFAULT_DATA_DIR } from "../../src/process/data-dir.ts";
import { DEFAULT_MODELS_DIR } from "../models/store.ts";
import { formatCheck, readyToServe } from "./check.ts";
import type { DoctorFlags } from "./run.ts";

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
      const { doctor } = await import("./run.ts");
      const checks = await doctor(flags, (check) => {
        if (!flags.json) console.log(formatCheck(check));
      });
      const ready = readyToServe(checks);
      if (flags.json) console.log(JSON.stringify({ ready, checks }, null, 2));
      else console.log(ready ? "ready to serve" : `not ready to serve: ${checks.filter((c) => !c.ok && c.needed).length} needed check(s) failed`);
      process.exitCode = ready ? 0 : 1;
    });
}
