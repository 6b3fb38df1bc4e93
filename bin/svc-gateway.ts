// `svc-gateway`: the gateway's command line. Parses argv and calls into gateway/.
import { Command, Option } from "commander";
import { join } from "node:path";
import { pino } from "pino";
import { DEFAULT_DATA_DIR } from "../agent/model-store.ts";
import { parseOperatorKeys } from "../gateway/auth.ts";
import { TRUST_LEVELS, type TrustLevel } from "../gateway/directory.ts";
import { parseFaults } from "../gateway/local-directory.ts";
import { serve } from "../gateway/serve.ts";
import { DEFAULT_KEEPALIVE_MS } from "../gateway/sse.ts";
import { collect, port, positiveInteger, positiveNumber } from "../src/cli-options.ts";

interface ServeFlags {
  host: string;
  port: number;
  coordinatorPort: number;
  catalog?: string;
  trustFloor: TrustLevel;
  dataDir: string;
  model: string[];
  modelsDir?: string;
  memoryGb?: number;
  threads?: number;
  keepaliveMs: number;
  testFault?: string;
}

const program = new Command("svc-gateway")
  .description("svc gateway: OpenAI-compatible routes in front of attested provider machines")
  .showHelpAfterError();

program
  .command("serve")
  .description("serve the OpenAI routes (and the embedded coordinator's catalog)")
  .option("--host <host>", "address to listen on", "127.0.0.1")
  .option("--port <port>", "gateway port (0 picks a free one)", port, 8080)
  .option("--coordinator-port <port>", "embedded coordinator port (0 picks a free one)", port, 8081)
  .option("--catalog <file>", "catalog file instead of the bundled models.lock.json")
  .addOption(new Option("--trust-floor <rung>", "lowest trust rung to list and use").choices(TRUST_LEVELS).default("process"))
  .option("--data-dir <dir>", "gateway state", join(DEFAULT_DATA_DIR, "gateway"))
  .option("--model <alias=path>", "run an in-process provider serving this file for the alias (repeatable)", collect, [])
  .option("--models-dir <dir>", "run an in-process provider serving the catalog files found in this dir")
  .option("--memory-gb <n>", "memory the in-process provider assumes instead of this machine's", positiveNumber)
  .option("--threads <n>", "llama.cpp threads for the in-process provider", positiveInteger)
  .option("--keepalive-ms <ms>", "quiet interval before an SSE `: keepalive` line", positiveNumber, DEFAULT_KEEPALIVE_MS)
  .addOption(new Option("--test-fault <spec>", "test only: token-delay-ms=N,fail-after=N on the in-process provider").hideHelp())
  .action(async (flags: ServeFlags) => {
    const operatorKeys = parseOperatorKeys(process.env.SVC_OPERATOR_KEYS);
    const logger = pino({ base: undefined, timestamp: pino.stdTimeFunctions.isoTime });
    const running = await serve({
      host: flags.host,
      port: flags.port,
      coordinatorPort: flags.coordinatorPort,
      catalogPath: flags.catalog,
      floor: flags.trustFloor,
      dataDir: flags.dataDir,
      operatorKeys,
      localModels: flags.model,
      modelsDir: flags.modelsDir,
      memoryGb: flags.memoryGb,
      threads: flags.threads,
      keepaliveMs: flags.keepaliveMs,
      faults: flags.testFault === undefined ? undefined : parseFaults(flags.testFault),
      logger,
    });
    console.log(`svc-gateway: OpenAI routes at ${running.url}/v1 (trust floor: ${flags.trustFloor})`);
    console.log(`svc-gateway: coordinator catalog at ${running.coordinatorUrl}/v1/catalog`);
    const { local } = running;
    if (local && local.aliases.length > 0) {
      console.log(`svc-gateway: in-process provider ${local.id} (process rung) serves ${local.aliases.join(", ")}`);
    } else {
      console.log("svc-gateway: no provider is serving yet; start one with --model ALIAS=PATH or --models-dir DIR");
    }
    if (operatorKeys.length === 0) console.log("svc-gateway: no API keys: set SVC_OPERATOR_KEYS=key1,key2 or every request gets 401");
    const stop = () => {
      void running.close().finally(() => process.exit(0));
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });

try {
  await program.parseAsync();
} catch (err) {
  console.error(`svc-gateway: ${(err as Error).message}`);
  process.exitCode = 1;
}
