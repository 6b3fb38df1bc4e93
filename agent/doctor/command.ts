// `svc-agent doctor`: what a provider runs when something is wrong. Runs every check in order, prints one
// line each (✓ or ✗ with the fix) or, with --json, all of them as data; exits 0 only when the agent can serve.
import type { Command } from "commander";
import { collect, httpUrl } from "../../src/process/cli-options.ts";
import { takeSecret } from "../../src/process/secret-option.ts";
import { addStartOptionsToCheck } from "../daemon/start-options.ts";
import { formatCheck, readyToServe } from "./check.ts";
import type { DoctorFlags } from "./run.ts";

export function addDoctorCommand(program: Command): void {
  const doctor = program
    .command("doctor")
    .description("check everything the agent needs to serve, one line each with the fix; exit 0 only when it can serve")
    .option("--coordinator <url>", "a coordinator to check: reachable, same catalog, clock skew (repeatable)", (v: string, prev: string[]) => collect(httpUrl(v), prev), []);
  addStartOptionsToCheck(doctor)
    .option("--release-keys <file>", "the coordinator's trusted release keys, to check the transparent rung as it would")
    .option("--roots <dir>", "the coordinator's attestation roots, to check the hardware rung as it would")
    .option("--json", "print {ready, checks: [...]} instead of lines")
    .action(async (flags: DoctorFlags, command: Command) => {
      const { doctor } = await import("./run.ts");
      const token = takeSecret(command, "--token", "SVC_PROVIDER_TOKEN", "svc-agent");
      const checks = await doctor({ ...flags, token }, (check) => {
        if (!flags.json) console.log(formatCheck(check));
      });
      const ready = readyToServe(checks);
      if (flags.json) console.log(JSON.stringify({ ready, checks }, null, 2));
      else console.log(ready ? "ready to serve" : `not ready to serve: ${checks.filter((c) => !c.ok && c.needed).length} needed check(s) failed`);
      process.exitCode = ready ? 0 : 1;
    });
}
