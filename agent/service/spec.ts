// What the per-user service runs, worked out from `service install`'s flags: `node BIN start FLAGS` with
// absolute paths, the environment it needs and where its output goes. The launchd and systemd writers turn
// one ServiceSpec into their file; nothing here touches the disk.
import { join, resolve } from "node:path";
import { PATH_OPTIONS } from "../daemon/start-options.ts";

/** The launchd label and the systemd unit's name. */
export const SERVICE_NAME = "svc-agent";

export interface ServiceSpec {
  /** node, the bin, `start`, then the flags. */
  program: string[];
  env: Record<string, string>;
  dataDir: string;
  /** The agent's own rotating log (`start --log-file`). */
  logFile: string;
  /** Where launchd sends stdout and stderr: only what the agent prints outside its log, a crash's trace. */
  consoleFile: string;
  /** How long a stop may take before the manager kills: the session grace plus time to leave. */
  stopTimeoutS: number;
}

/** An option given on install's command line, by its long name: `--memory-gb` and 24. */
export interface GivenOption {
  long: string;
  value: unknown;
}

export interface SpecInput {
  node: string;
  bin: string;
  /** The start options given on the command line, in the order commander declares them. */
  given: GivenOption[];
  /** The data dir in effect (given or default). */
  dataDir: string;
  shutdownGraceMs: number;
  /** `--token` or SVC_PROVIDER_TOKEN: it goes in the environment, where `ps` cannot show it. */
  token?: string;
  /** Install's working directory and PATH: relative paths and an attestor's commands mean what they meant there. */
  cwd: string;
  path?: string;
}

/** Options that never go into argv: the token goes in the environment, and these two are always written. */
const HANDLED = new Set(["--token", "--data-dir", "--log-file"]);
/** Time past the session grace for the agent to tell the coordinator it leaves and close its link. */
const LEAVE_S = 10;

export function serviceSpec(input: SpecInput): ServiceSpec {
  const dataDir = resolve(input.cwd, input.dataDir);
  const logFileFlag = input.given.find((o) => o.long === "--log-file")?.value;
  const logFile = typeof logFileFlag === "string" ? resolve(input.cwd, logFileFlag) : join(dataDir, "logs", `${SERVICE_NAME}.log`);
  const flags: string[] = [];
  for (const { long, value } of input.given) {
    if (HANDLED.has(long)) continue;
    if (long === "--model") {
      for (const pair of value as string[]) {
        const eq = pair.indexOf("=");
        flags.push(long, `${pair.slice(0, eq)}=${resolve(input.cwd, pair.slice(eq + 1))}`);
      }
    } else flags.push(long, PATH_OPTIONS.has(long) ? resolve(input.cwd, String(value)) : String(value));
  }
  const env: Record<string, string> = {};
  if (input.token !== undefined) env.SVC_PROVIDER_TOKEN = input.token;
  // launchd gives a bare PATH; an attestor is run through the shell and must find what it found at install
  if (input.given.some((o) => o.long === "--attestor") && input.path) env.PATH = input.path;
  return {
    program: [input.node, input.bin, "start", ...flags, "--data-dir", dataDir, "--log-file", logFile],
    env,
    dataDir,
    logFile,
    consoleFile: join(dataDir, "logs", `${SERVICE_NAME}.console.log`),
    stopTimeoutS: Math.ceil(input.shutdownGraceMs / 1000) + LEAVE_S,
  };
}

/** Where the program's `--log-file` points, read back from the argv a service file holds. */
export function logFileIn(program: readonly string[]): string | undefined {
  const at = program.indexOf("--log-file");
  return at === -1 ? undefined : program[at + 1];
}
