// The flags `svc-agent start` takes, declared once: `start` runs with them, `service install` writes them into the
// service file and `doctor` takes those it checks, so the three can never drift apart.
import { Command, InvalidArgumentError, Option } from "commander";
import { join } from "node:path";
import { DEFAULT_DATA_DIR } from "../../src/process/data-dir.ts";
import { collect, existingModelFile, nonNegativeInteger, nonNegativeNumber, positiveInteger, positiveNumber } from "../../src/process/cli-options.ts";
import { DEFAULT_MODELS_DIR } from "../models/models-dir.ts";
import { DEFAULT_CONTEXT_SIZE, MIN_CONTEXT_SIZE } from "../engine/context-size.ts";
import { DEFAULT_LOG_MAX_MB } from "./log-file.ts";
import { PACKAGE_ROOT } from "../../src/process/package-root.ts";

/** A release ships its signed manifest here; `--release-manifest` points elsewhere. */
export const BUNDLED_MANIFEST_PATH = join(PACKAGE_ROOT, "release-manifest.json");

const contextSize = (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < MIN_CONTEXT_SIZE) throw new InvalidArgumentError(`expected a whole number of tokens, ${MIN_CONTEXT_SIZE} or more`);
  return n;
};

export interface StartFlags {
  coordinator: string;
  catalog?: string;
  model: string[];
  modelsDir: string;
  dataDir: string;
  memoryGb?: number;
  attestor?: string;
  releaseManifest?: string;
  name?: string;
  token?: string;
  tokenFile?: string;
  threads?: number;
  contextSize?: number;
  promptCacheGb?: number;
  promptCacheTtl: number;
  shutdownGraceMs: number;
  logFile?: string;
  logMaxMb: number;
}

type Parser = (value: string, previous: never) => unknown;

/** One of start's flags, as a row of the table both commands that take it are built from. */
interface StartFlag {
  flags: string;
  help: string;
  /**
   * How `svc-agent doctor` words it, when doctor takes it to check what start would do with it (`true`: start's own
   * words); absent, the flag is start's alone.
   */
  doctor?: string | true;
  parse?: Parser;
  /** doctor's parser, where start's would refuse a value that doctor should report as a failed check instead. */
  doctorParse?: Parser;
  default?: unknown;
  env?: string;
  required?: true;
  /** Its value is a file or directory: a service runs elsewhere, so `service install` makes it absolute. */
  path?: true;
  /** The attribute of a flag it cannot be given with (a secret and its file). */
  conflicts?: string;
}

const START_FLAGS: readonly StartFlag[] = [
  { flags: "--coordinator <url>", help: "the coordinator, e.g. http://127.0.0.1:8081; several, comma-separated: a dropped link moves to the next", required: true },
  { flags: "--catalog <file>", help: "catalog file instead of the bundled models.lock.json", doctor: true, path: true },
  {
    flags: "--model <alias=path>",
    help: "serve this file for the alias (repeatable)",
    doctor: "this file for the alias, as start takes it (repeatable)",
    parse: existingModelFile,
    doctorParse: collect,
    default: [],
  },
  { flags: "--models-dir <dir>", help: "where downloaded models live", doctor: true, default: DEFAULT_MODELS_DIR, path: true },
  {
    flags: "--data-dir <dir>",
    help: "agent state: keys (created on first start, mode 0600), verified files",
    doctor: "the agent's state: keys and verified files",
    default: DEFAULT_DATA_DIR,
    path: true,
  },
  { flags: "--memory-gb <n>", help: "memory to assume instead of this machine's", doctor: true, parse: positiveNumber },
  {
    flags: "--attestor <cmd>",
    help: "program that prints a PEM chain binding the given key digest (hardware rung)",
    doctor: "the attestor start would run: it must run and its chain verify",
  },
  {
    flags: "--release-manifest <file>",
    help: "signed release manifest listing this build's measurement (transparent rung)",
    doctor: "the release manifest start would present",
    path: true,
  },
  { flags: "--name <label>", help: "a label for this machine in the coordinator's logs" },
  {
    flags: "--token <token>",
    help: "the enrollment token the operator gave you (svc-gateway providers enroll)",
    doctor: "the enrollment token start would present (only whether one is set is checked)",
    env: "SVC_PROVIDER_TOKEN",
  },
  {
    flags: "--token-file <file>",
    help: "read the enrollment token from this file (its first line), so that ps does not show it",
    doctor: "the token file start would read",
    path: true,
    conflicts: "token",
  },
  { flags: "--threads <n>", help: "llama.cpp CPU threads", parse: positiveInteger },
  {
    flags: "--context-size <tokens>",
    help: `tokens of prompt and answer one session may hold, at most the model's training context (default ${DEFAULT_CONTEXT_SIZE}); each cached conversation takes as many`,
    parse: contextSize,
  },
  {
    flags: "--prompt-cache-gb <n>",
    help: "memory for callers' cached conversations, each kept apart (default: a quarter of what the model leaves; 0: off)",
    parse: nonNegativeNumber,
  },
  { flags: "--prompt-cache-ttl <seconds>", help: "how long a caller's cached conversation is kept after its last request", parse: positiveNumber, default: 300 },
  { flags: "--shutdown-grace-ms <ms>", help: "on SIGTERM/SIGINT, how long a running session may take to finish", parse: nonNegativeInteger, default: 30_000 },
  { flags: "--log-file <file>", help: "write the log lines here, timestamped, instead of to stdout; rotated past --log-max-mb", path: true },
  { flags: "--log-max-mb <n>", help: "rotate --log-file past this size, keeping 3 old files (FILE.1 newest)", parse: positiveNumber, default: DEFAULT_LOG_MAX_MB },
];

/** The options whose value is a file or directory: a service runs elsewhere, so they are made absolute. */
export const PATH_OPTIONS: ReadonlySet<string> = new Set(START_FLAGS.filter((f) => f.path).map((f) => f.flags.split(" ")[0]!));

/** What `command.option(flags, help, parse, default)` would add, with the env variable and mandatoriness too. */
function option(flag: StartFlag, help: string, parse: Parser | undefined): Option {
  const built = new Option(flag.flags, help);
  // each parser takes the previous value of its own type; commander hands back what the parser returned before
  if (parse !== undefined) built.argParser(parse as (value: string, previous: unknown) => unknown);
  if (flag.default !== undefined) built.default(flag.default);
  if (flag.env !== undefined) built.env(flag.env);
  if (flag.required) built.makeOptionMandatory();
  if (flag.conflicts !== undefined) built.conflicts(flag.conflicts);
  return built;
}

export function addStartOptions(command: Command): Command {
  for (const flag of START_FLAGS) command.addOption(option(flag, flag.help, flag.parse));
  return command;
}

/** The start flags `svc-agent doctor` takes, in doctor's words, to check what start would do with them. */
export function addStartOptionsToCheck(command: Command): Command {
  for (const flag of START_FLAGS) {
    if (flag.doctor !== undefined) command.addOption(option(flag, flag.doctor === true ? flag.help : flag.doctor, flag.doctorParse ?? flag.parse));
  }
  return command;
}
