// `svc-agent`'s command line: every command and flag, built here so that bin/svc-agent.ts stays a shim that
// parses argv, and scripts/config-reference.ts can read the options to write docs/configuration.md. A command's
// heavy modules (llama.cpp, X.509, sealing, the catalog's zod) load in its action, so `--help` starts in a blink
// and each command loads only what it needs.
import { Command, Option } from "commander";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { getPriority, setPriority } from "node:os";
import { defaultThreads, memoryGb } from "./daemon/machine.ts";
import { DEFAULT_MODELS_DIR } from "./models/models-dir.ts";
import { DEFAULT_DATA_DIR } from "../src/process/data-dir.ts";
import { PRIVATE_DIR_MODE } from "../src/process/file-modes.ts";
import { makeDirs } from "../src/process/make-dir.ts";
import { DEFAULT_HUB_URL } from "./models/pull.ts";
import { VerifiedFiles } from "./models/verified-files.ts";
import { addStartOptions, type StartFlags } from "./daemon/start-options.ts";
import { RotatingLog } from "./daemon/log-file.ts";
import { addServiceCommand } from "./service/command.ts";
import { addDoctorCommand } from "./doctor/command.ts";
import type { VerifyFlags } from "./verify/command.ts";
import type { AttestationFlags } from "./verify/attestation.ts";
import { collect, existingModelFile, hexKey, httpUrl, nonNegativeInteger, oneLineUsageErrors, packageVersion, positiveInteger, positiveNumber, receiptNonce, USAGE_EXIT } from "../src/process/cli-options.ts";
import { DEFAULT_HEARTBEAT_MS, IDLE_HEARTBEAT_FACTOR } from "../src/link/heartbeat.ts";
import { onShutdownSignal } from "../src/process/shutdown.ts";
import { readyLine } from "../src/process/ready-line.ts";
import { secretFileOption, takeSecret } from "../src/process/secret-option.ts";


interface RunFlags extends StartFlags {
  heartbeatMs: number;
  testFault?: string;
  engine: "llama" | "synthetic";
  syntheticTokens: number;
  syntheticTokenMs: number;
}

/**
 * `start --test-fault` is for the tests alone: its module is left out of the package (package.json "files"), and where
 * it is absent so is the flag, so an installed agent refuses it as an unknown option.
 */
const TEST_FAULTS_BUILT = ["ts", "js"].some((ext) => existsSync(new URL(`./daemon/test-faults.${ext}`, import.meta.url)));

const testFaultOption = () =>
  new Option("--test-fault <spec>", "test only: token-delay-ms=N,fail-after=N,first-token-delay-ms=N,block-ms=N,endless=CHARS,tool-call=NAME,error=CODE,logprob-shift=MILLINATS,record=DIR,substitute=PATH,cheat=FRACTION,receipt=tamper|swap-key|response-hash|replay:FILE").hideHelp();

/** What `--test-fault SPEC` makes of each session. */
const testFaults = async (spec: string) => (await import("./daemon/test-faults.ts")).faultInjection(spec);

/** The catalog's parsing (zod) and the model store, loaded by the commands that read a catalog. */
const catalogModules = async () => {
  const [{ catalogBody, findAlias }, { catalogFrom }, store] = await Promise.all([import("../src/catalog.ts"), import("./models/catalog-source.ts"), import("./models/store.ts")]);
  return { catalogBody, findAlias, catalogFrom, ...store };
};

/** The `svc-agent` program, not yet parsed. */
export function agentProgram(): Command {
  const program = new Command("svc-agent")
    .description("svc provider daemon: serves catalog models through llama.cpp and signs a receipt for each session")
    // usage errors exit USAGE_EXIT, apart from verify's verdicts 1 and 2; set before the subcommands, which copy it
    .version(packageVersion())
    .exitOverride()
    .configureOutput(oneLineUsageErrors("svc-agent"));

  program
    .command("catalog")
    .description("print the model catalog and whether this machine can serve each alias")
    .option("--json", "print the GET /v1/catalog body instead of a table")
    .option("--catalog <file>", "read this catalog file instead of the bundled models.lock.json")
    .option("--coordinator <url>", "read the catalog from a running coordinator")
    .option("--models-dir <dir>", "where downloaded models live", DEFAULT_MODELS_DIR)
    .option("--model <alias=path>", "use this file for an alias (repeatable)", existingModelFile, [])
    .option("--memory-gb <n>", "memory to assume instead of this machine's", positiveNumber)
    .action(async (opts: { json?: boolean; catalog?: string; coordinator?: string; modelsDir: string; model: string[]; memoryGb?: number }, command: Command) => {
      const { catalogBody, catalogFrom, ModelFileError, ModelStore, parseModelOverrides } = await catalogModules();
      const catalog = await catalogFrom(opts);
      if (opts.json) {
        console.log(JSON.stringify(catalogBody(catalog), null, 2));
        return;
      }
      let overrides: Map<string, string>;
      try {
        overrides = parseModelOverrides(catalog, opts.model);
      } catch (err) {
        // an alias the catalog lacks is known only once the catalog is read, and is a usage error like the rest
        if (!(err instanceof ModelFileError)) throw err;
        return command.error(err.message, { exitCode: USAGE_EXIT });
      }
      const store = new ModelStore({ catalog, modelsDir: opts.modelsDir, overrides });
      const [{ catalogTable }, { pullCommand }] = await Promise.all([import("./models/catalog-view.ts"), import("./models/pull-command.ts")]);
      const machine = { memoryGb: memoryGb(opts.memoryGb), isPresent: (a: string) => store.isPresent(a), pathFor: (a: string) => store.pathFor(a), pullCommand: (a: string) => pullCommand(store, a) };
      console.log(catalogTable(catalog, machine));
    });

  program
    .command("pull")
    .description("download an alias's pinned GGUF at its pinned revision, resuming and verifying SHA-256")
    .argument("<alias>", "catalog alias, for example qwen3-4b")
    .option("--catalog <file>", "read this catalog file instead of the bundled models.lock.json")
    .option("--models-dir <dir>", "where to put the model", DEFAULT_MODELS_DIR)
    .option("--data-dir <dir>", "agent state (remembers verified files)", DEFAULT_DATA_DIR)
    .option("--hub-url <url>", "model hub to download from", DEFAULT_HUB_URL)
    .action(async (alias: string, opts: { catalog?: string; modelsDir: string; dataDir: string; hubUrl: string }) => {
      const [{ pull }, { catalogFrom, findAlias }, { downloadBar }] = await Promise.all([import("./models/pull.ts"), catalogModules(), import("./models/progress-bar.ts")]);
      const catalog = await catalogFrom(opts);
      const entry = findAlias(catalog, alias);
      if (!entry) throw new Error(`${alias} is not in the catalog (aliases: ${catalog.models.map((m) => m.alias).join(", ")})`);
      // before the models dir, which is in it by default: a first pull must not leave ~/.svc readable by others
      makeDirs(opts.dataDir, PRIVATE_DIR_MODE);
      const outcome = await pull({
        entry,
        modelsDir: opts.modelsDir,
        hubUrl: opts.hubUrl,
        verified: new VerifiedFiles(join(opts.dataDir, "verified-models.json")),
        progress: process.stderr.isTTY ? downloadBar(alias) : undefined,
        log: (line) => console.error(line),
      });
      const verb = outcome.status === "present" ? "already present and verified" : "downloaded and verified";
      console.log(`${alias}: ${verb} (sha256 ${entry.sha256}) at ${outcome.path}`);
    });

  const start = addStartOptions(
    program.command("start").description("serve catalog models to a coordinator: prove this machine's keys, advertise, run sealed sessions"),
  )
    .addOption(new Option("--engine <kind>", "llama (serves models) or synthetic (benchmarks only: fixed tokens, no model, rung process)").choices(["llama", "synthetic"]).default("llama"))
    .option("--synthetic-tokens <n>", "synthetic engine: tokens per answer", positiveInteger, 16)
    .option("--synthetic-token-ms <ms>", "synthetic engine: pause before each token", nonNegativeInteger, 0)
    .addOption(new Option("--heartbeat-ms <ms>", `link heartbeat interval while running a session; ${IDLE_HEARTBEAT_FACTOR}x longer while idle`).argParser(positiveInteger).default(DEFAULT_HEARTBEAT_MS).hideHelp());
  if (TEST_FAULTS_BUILT) start.addOption(testFaultOption());
  start.action(async (flags: RunFlags, command: Command) => {
    const token = takeSecret(command, "--token", "SVC_PROVIDER_TOKEN", "svc-agent");
    // under a service manager the lines go to a rotating file; a failure to start is logged there too
    const file = flags.logFile === undefined ? undefined : new RotatingLog(flags.logFile, flags.logMaxMb);
    const log = (line: string) => {
      const text = `svc-agent${flags.name ? ` [${flags.name}]` : ""}: ${line}`;
      if (file) file.write(text);
      else console.log(text);
    };
    const [{ startAgent }, faults] = await Promise.all([import("./daemon/start.ts"), flags.testFault === undefined ? undefined : testFaults(flags.testFault)]);
    const agent = await startAgent({
      coordinatorUrl: flags.coordinator,
      catalogPath: flags.catalog,
      models: flags.model,
      modelsDir: flags.modelsDir,
      dataDir: flags.dataDir,
      memoryGb: flags.memoryGb,
      attestor: flags.attestor,
      releaseManifestPath: flags.releaseManifest,
      name: flags.name,
      threads: flags.threads,
      contextSize: flags.contextSize,
      promptCache: { gb: flags.promptCacheGb, ttlMs: flags.promptCacheTtl * 1000 },
      heartbeatMs: flags.heartbeatMs,
      token,
      faults,
      ...(flags.engine === "synthetic" ? { synthetic: { tokens: flags.syntheticTokens, tokenMs: flags.syntheticTokenMs } } : {}),
      log,
      // on stdout even with --log-file: it is for whatever started this process, not the log
      ready: (state) => console.log(readyLine({ ready: "svc-agent start", ...state, coordinator: flags.coordinator })),
    }).catch((err: Error) => {
      file?.write(`svc-agent: ${err.message}`);
      throw err;
    });
    // a second signal means now: the running session is abandoned
    onShutdownSignal(async () => {
      log(`leaving the directory; a running session has ${flags.shutdownGraceMs} ms to finish`);
      await agent.stop(flags.shutdownGraceMs);
      log("stopped");
    }, log);
  });

  addServiceCommand(program);
  addDoctorCommand(program);

  program
    .command("verify")
    .description("re-check the receipt in a saved response body, a receipt alone or an SSE transcript: exit 0 VALID (checks hold and the key is trusted), 1 INVALID, 2 UNVERIFIED (checks hold, key not tied to a provider you trust), 3 could not check; or, with --attestation, a provider's attestation record; or, with --audit, an audit's evidence")
    .argument("[file]", "what the gateway returned, saved to a file")
    .option("--providers <url>", "a provider listing ({gateway}/v1/providers): it must list the receipt's provider at the receipt's rung and serial", httpUrl)
    .addOption(new Option("--api-key <key>", "API key for --providers").env("SVC_API_KEY"))
    .addOption(secretFileOption("--api-key", "the API key for --providers"))
    .option("--key <hex>", "the provider's Ed25519 public key (64 hex characters), known some other way: it must have signed", hexKey)
    .addOption(new Option("--provider-key <hex>", "the same as --key").argParser(hexKey).conflicts("key"))
    .option("--trust-on-first-use <file>", "keys seen before: a new provider's key is recorded and passes; a key that contradicts the file fails, and so does a provider with a failed audit recorded there (by --audit, when its fail reproduces)")
    .option("--nonce <value>", "the x-svc-receipt-nonce you sent: it must be the receipt's client_nonce", receiptNonce)
    .addOption(
      new Option("--attestation <file>", "instead of a receipt, re-check a saved GET /v1/providers/{id}/attestation record: exit 0 VALID, 1 INVALID, 3 not checked or could not check")
        .conflicts(["providers", "apiKey", "apiKeyFile", "key", "providerKey", "trustOnFirstUse", "nonce"]),
    )
    .option("--roots <dir>", "with --attestation: the attestation roots you trust (.pem/.crt), for the hardware rung")
    .option("--release-keys <file>", "with --attestation: the release keys you trust (one hex key a line), for the transparent rung")
    .addOption(
      new Option("--audit <file>", "instead of a receipt, re-check an audit's evidence (GET /v1/audits/{id}) and re-run its reference pass on --model: exit 0 sound and reproduced, 1 unsound or not reproduced, 3 could not check")
        .conflicts(["providers", "apiKey", "apiKeyFile", "key", "providerKey", "nonce", "attestation"]),
    )
    .option("--model <path>", "with --audit: your copy of the GGUF the audit names (its SHA-256 must be the audit's)")
    .option("--auditor-key <hex>", "with --audit: the auditor's Ed25519 key you trust (64 hex characters)", hexKey)
    .action(async (file: string | undefined, flags: VerifyFlags & AttestationFlags & { attestation?: string; audit?: string; model?: string; auditorKey?: string }, command: Command) => {
      const apiKey = takeSecret(command, "--api-key", "SVC_API_KEY", "svc-agent");
      const other = flags.attestation ?? flags.audit;
      // FILE is required unless --attestation or --audit names the file: commander's own words when none is given
      if (file === undefined && other === undefined) command.error("error: missing required argument 'file'", { exitCode: USAGE_EXIT });
      if (file !== undefined && other !== undefined) command.error(`give FILE or ${flags.audit === undefined ? "--attestation" : "--audit"} FILE, not both`, { exitCode: USAGE_EXIT });
      if (flags.attestation === undefined && (flags.roots ?? flags.releaseKeys) !== undefined) command.error("--roots and --release-keys go with --attestation", { exitCode: USAGE_EXIT });
      if (flags.audit === undefined && (flags.model ?? flags.auditorKey) !== undefined) command.error("--model and --auditor-key go with --audit", { exitCode: USAGE_EXIT });
      if (flags.audit !== undefined && flags.model === undefined) command.error("--audit needs --model PATH, your copy of the GGUF the audit names", { exitCode: USAGE_EXIT });
      const { CANNOT_CHECK_EXIT, VERIFY_EXIT, verifyFile } = await import("./verify/command.ts");
      try {
        if (flags.audit !== undefined) {
          const { AUDIT_EXIT, verifyAuditFile } = await import("./verify/audit.ts");
          const auditFlags = { model: flags.model!, ...(flags.auditorKey === undefined ? {} : { auditorKey: flags.auditorKey }), ...(flags.trustOnFirstUse === undefined ? {} : { trustOnFirstUse: flags.trustOnFirstUse }) };
          const report = await verifyAuditFile(flags.audit, auditFlags, (line) => console.log(line));
          process.exitCode = AUDIT_EXIT[report.status];
          return;
        }
        if (flags.attestation !== undefined) {
          const { ATTESTATION_EXIT, verifyAttestationFile } = await import("./verify/attestation.ts");
          process.exitCode = ATTESTATION_EXIT[await verifyAttestationFile(flags.attestation, flags, (line) => console.log(line))];
          return;
        }
        const status = await verifyFile(file!, { ...flags, ...(apiKey ? { apiKey } : {}) }, (line) => console.log(line));
        process.exitCode = VERIFY_EXIT[status];
      } catch (err) {
        // no verdict at all: distinct from INVALID, so a script never reads "could not look" as "forged"
        console.error(`svc-agent: ${(err as Error).message}`);
        process.exitCode = CANNOT_CHECK_EXIT;
      }
    });

  program
    .command("rescore")
    .description("the auditor's reference pass: reads one JSON job a line on stdin (src/audit/rescore-job.ts), re-scores the provider's answer tokens on the pinned GGUF on CPU, one job at a time, and writes one result a line on stdout")
    .option("--model <alias=path,...>", "the pinned GGUF of each alias to score with, its SHA-256 checked against the catalog at start (comma-separated, or repeated)", collect, [])
    .option("--catalog <file>", "read this catalog file instead of the bundled models.lock.json")
    .option("--threads <n>", "the most llama.cpp CPU threads a job may ask for (default: the physical cores less one)", positiveInteger)
    .action(async (opts: { model: string[]; catalog?: string; threads?: number }, command: Command) => {
      const { catalogFrom, ModelFileError, ModelStore, parseModelOverrides } = await catalogModules();
      const catalog = await catalogFrom(opts);
      const flags = opts.model.flatMap((value) => value.split(","));
      if (flags.length === 0) return command.error("--model: give at least one ALIAS=PATH", { exitCode: USAGE_EXIT });
      const log = (line: string) => console.error(`svc-agent rescore: ${line}`);
      const [{ ReferenceModels }, { serveRescoreJobs }] = await Promise.all([import("./audit/reference-models.ts"), import("./audit/rescore-service.ts")]);
      let models;
      try {
        const overrides = parseModelOverrides(catalog, flags);
        models = new ReferenceModels(new ModelStore({ catalog, overrides }), [...overrides.keys()], log);
        await models.verify();
      } catch (err) {
        if (!(err instanceof ModelFileError)) throw err;
        return command.error(err.message.startsWith("--model") ? err.message : `--model: ${err.message}`, { exitCode: USAGE_EXIT });
      }
      // an auditor's work yields to the machine's own
      setPriority(Math.max(getPriority(), 10));
      const write = (line: string) => new Promise<void>((resolve, reject) => process.stdout.write(line, (err) => (err ? reject(err) : resolve())));
      try {
        await serveRescoreJobs(process.stdin, write, models, { maxThreads: opts.threads ?? defaultThreads() });
      } finally {
        await models.dispose();
      }
    });

  program
    .command("measure")
    .description("print this installed build's code measurement (SHA-256 over its code files), for a release manifest")
    .action(async () => console.log((await import("../src/trust/measure.ts")).measure()));
  return program;
}
