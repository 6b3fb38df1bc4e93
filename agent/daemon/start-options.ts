// The flags `svc-agent start` takes, declared once: `start` runs with them and `service install` writes
// them into the service file, so the two can never drift apart.
import { Command, Option } from "commander";
import { join } from "node:path";
import { DEFAULT_DATA_DIR } from "../../src/process/data-dir.ts";
import { existingModelFile, nonNegativeInteger, positiveInteger, positiveNumber } from "../../src/process/cli-options.ts";
import { DEFAULT_MODELS_DIR } from "../models/store.ts";
import { DEFAULT_LOG_MAX_MB } from "./log-file.ts";
import { PACKAGE_ROOT } from "../../src/process/package-root.ts";

/** A release ships its signed manifest here; `--release-manifest` points elsewhere. */
export const BUNDLED_MANIFEST_PATH = join(PACKAGE_ROOT, "release-manifest.json");

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
  threads?: number;
  shutdownGraceMs: number;
  logFile?: string;
  logMaxMb: number;
}

/** The options whose value is a file or directory: a service runs elsewhere, so they are made absolute. */
export const PATH_OPTIONS = new Set(["--catalog", "--models-dir", "--data-dir", "--release-manifest", "--log-file"]);

export function addStartOptions(command: Command): Command {
  return command
    .requiredOption("--coordinator <url>", "the coordinator, e.g. http://127.0.0.1:8081")
    .option("--catalog <file>", "catalog file instead of the bundled models.lock.json")
    .option("--model <alias=path>", "serve this file for the alias (repeatable)", existingModelFile, [])
    .option("--models-dir <dir>", "where downloaded models live", DEFAULT_MODELS_DIR)
    .option("--data-dir <dir>", "agent state: keys (created on first start, mode 0600), verified files", DEFAULT_DATA_DIR)
    .option("--memory-gb <n>", "memory to assume instead of this machine's", positiveNumber)
    .option("--attestor <cmd>", "program that prints a PEM chain binding the given key digest (hardware rung)")
    .option("--release-manifest <file>", "signed release manifest listing this build's measurement (transparent rung)")
    .option("--name <label>", "a label for this machine in the coordinator's logs")
    .addOption(new Option("--token <token>", "the enrollment token the operator gave you (svc-gateway providers enroll)").env("SVC_PROVIDER_TOKEN"))
    .option("--threads <n>", "llama.cpp CPU threads", positiveInteger)
    .option("--shutdown-grace-ms <ms>", "on SIGTERM/SIGINT, how long a running session may take to finish", nonNegativeInteger, 30_000)
    .option("--log-file <file>", "write the log lines here, timestamped, instead of to stdout; rotated past --log-max-mb")
    .option("--log-max-mb <n>", "rotate --log-file past this size, keeping 3 old files (FILE.1 newest)", positiveNumber, DEFAULT_LOG_MAX_MB);
}
