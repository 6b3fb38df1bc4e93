// `svc-gateway coordinator`, and the coordinator's flags that `serve` takes too for the coordinator it embeds (cli.ts).
import { Command, Option } from "commander";
import { DEFAULT_QUEUE_LIMITS, type QueueLimits } from "./coordinator/queue-limits.ts";
import { DEFAULT_GATE_LIMITS, type GateLimits } from "./coordinator/connection-gate.ts";
import { enrollmentLookup, liveEnrollments } from "./keys/provider-tokens.ts";
import { dataDirGatewaySecret } from "./keys/gateway-secret.ts";
import { makePrivateDataDir } from "./keys/private-files.ts";
import { databaseOption, DEFAULT_GATEWAY_DIR } from "./cli-admin.ts";
import { port, positiveInteger } from "../src/process/cli-options.ts";
import { DEFAULT_HEARTBEAT_MS, IDLE_HEARTBEAT_FACTOR } from "../src/link/heartbeat.ts";
import { onShutdownSignal } from "../src/process/shutdown.ts";
import { readyLine } from "../src/process/ready-line.ts";
import type { NatsAccess } from "../src/link/nats.ts";
import { secretFileOption, takeSecret } from "../src/process/secret-option.ts";

export interface CoordinatorFlags {
  host: string;
  catalog?: string;
  releaseKeys?: string;
  attestationRoots?: string;
  dataDir: string;
  database?: string;
  openEnrollment?: boolean;
  maxQueuePerProvider: number;
  maxQueuePerAlias: number;
  maxQueuedMs: number;
  handshakeTimeoutMs: number;
  maxPendingConnections: number;
  maxPendingPerAddress: number;
  heartbeatMs: number;
  rechallengeMs?: number;
  nats?: string;
  natsCreds?: string;
  natsTlsCa?: string;
  natsTlsCert?: string;
  natsTlsKey?: string;
}

/** How this process proves itself to the NATS servers and checks them (src/link/nats.ts). */
export function natsAccess(flags: CoordinatorFlags): NatsAccess {
  return { creds: flags.natsCreds, tlsCa: flags.natsTlsCa, tlsCert: flags.natsTlsCert, tlsKey: flags.natsTlsKey };
}

/**
 * The gateway's and coordinator's JSON lines on stdout, written synchronously, as console.log writes to a file or pipe
 * on Linux: pino's default hands each line to a libuv worker thread and wakes the event loop when it is written, which
 * cost a gateway more than the write itself on every request (its access line). A line is on stdout when the call
 * returns, so a crash loses none.
 */
export const newLogger = async () => {
  const { pino } = await import("pino");
  return pino({ base: undefined, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: 1, sync: true }));
};

export function queueLimits(flags: CoordinatorFlags): Partial<QueueLimits> {
  return { queuePerProvider: flags.maxQueuePerProvider, queuePerAlias: flags.maxQueuePerAlias, queuedMs: flags.maxQueuedMs };
}

export function gateLimits(flags: CoordinatorFlags): GateLimits {
  return { handshakeMs: flags.handshakeTimeoutMs, maxPending: flags.maxPendingConnections, maxPendingPerAddress: flags.maxPendingPerAddress };
}

/** The options a coordinator takes, whether it runs alone or embedded in `serve`. */
export function coordinatorOptions(command: Command): Command {
  return command
    .option("--catalog <file>", "catalog file instead of the bundled models.lock.json")
    .option("--release-keys <file>", "trusted release keys (one hex Ed25519 public key per line): transparent rung, as the coordinator grants it and each gateway re-checks it")
    .option("--attestation-roots <dir>", "trusted attestation root certificates (.pem/.crt): hardware rung, as the coordinator grants it and each gateway re-checks it")
    .option("--data-dir <dir>", "gateway state: key store with users, API keys and provider enrollment tokens", DEFAULT_GATEWAY_DIR)
    .addOption(databaseOption())
    .option("--open-enrollment", "admit any machine as a provider, without an enrollment token (pair it with --trust-floor hardware)")
    .addOption(new Option("--gateway-secret <secret>", "the secret gateways present to a shared coordinator").env("SVC_GATEWAY_SECRET"))
    .addOption(
      new Option("--nats <urls>", "NATS servers (nats://host:port or tls://host:port, comma-separated; nats://user:password@… or nats://token@… where the servers ask) for replicas: gateways and coordinators meet there").env("SVC_NATS_URL"),
    )
    .option("--nats-creds <file>", "NATS credentials file (a user JWT and NKey seed, as nsc writes it), where the servers ask for one")
    .option("--nats-tls-ca <file>", "CA certificates (PEM) that sign the NATS servers' TLS certificates; implies TLS")
    .option("--nats-tls-cert <file>", "client certificate (PEM) for NATS servers that verify clients, with --nats-tls-key")
    .option("--nats-tls-key <file>", "the private key (PEM) of --nats-tls-cert")
    .addOption(secretFileOption("--gateway-secret", "the gateway secret"))
    .option("--max-queue-per-provider <n>", "requests that may wait in front of one provider before 503 overloaded", positiveInteger, DEFAULT_QUEUE_LIMITS.queuePerProvider)
    .option("--max-queue-per-alias <n>", "requests that may wait for one model over all providers before 503 overloaded", positiveInteger, DEFAULT_QUEUE_LIMITS.queuePerAlias)
    .option("--max-queued-ms <ms>", "the longest a request waits in a provider's queue before 503 overloaded", positiveInteger, DEFAULT_QUEUE_LIMITS.queuedMs)
    .option("--handshake-timeout-ms <ms>", "coordinator port: a connection must prove itself (agent granted, gateway secret) within this", positiveInteger, DEFAULT_GATE_LIMITS.handshakeMs)
    .option("--max-pending-connections <n>", "coordinator port: connections not yet proven, in total; more are answered 503 and closed", positiveInteger, DEFAULT_GATE_LIMITS.maxPending)
    .option("--max-pending-per-address <n>", "coordinator port: connections not yet proven from one address (IPv6: a /64); more are answered 503 and closed", positiveInteger, DEFAULT_GATE_LIMITS.maxPendingPerAddress)
    .addOption(new Option("--heartbeat-ms <ms>", `busy link heartbeat interval: this gateway's, and the one the coordinator expects (idle agents: ${IDLE_HEARTBEAT_FACTOR}x longer)`).argParser(positiveInteger).default(DEFAULT_HEARTBEAT_MS).hideHelp())
    .addOption(new Option("--rechallenge-ms <ms>", "how often agents must answer a fresh challenge").argParser(positiveInteger).hideHelp());
}

/** `svc-gateway coordinator`: a coordinator alone; and `svc-gateway directory-key`, the key it signs with on NATS. */
export function addCoordinatorCommand(program: Command): void {
  program
    .command("directory-key")
    .description("print the directory key a coordinator on NATS signs with (made in --data-dir when there is none yet), for the gateways' --coordinator-keys")
    .option("--data-dir <dir>", "the coordinator's data dir (serve's, for its embedded coordinator)", DEFAULT_GATEWAY_DIR)
    .action(async (flags: { dataDir: string }) => {
      const { directoryKey } = await import("./coordinator/directory-key.ts");
      console.log(directoryKey(flags.dataDir).publicKey);
    });

  coordinatorOptions(
    program
      .command("coordinator")
      .description("run a coordinator alone (catalog, provider directory, queues, sealed relay) for gateways to share")
      .option("--host <host>", "address to listen on", "127.0.0.1")
      .requiredOption("--port <port>", "coordinator port (0 picks a free one)", port),
  ).action(async (flags: CoordinatorFlags & { port: number }, command: Command) => {
    const [{ startCoordinator }, { checkNatsDatabase, openKeyStore }, { loadCatalog }] = await Promise.all([
      import("./coordinator/start.ts"),
      import("./keys/open-store.ts"),
      import("../src/catalog-file.ts"),
    ]);
    const given = takeSecret(command, "--gateway-secret", "SVC_GATEWAY_SECRET", "svc-gateway");
    if (flags.nats !== undefined) checkNatsDatabase(flags);
    const nats = flags.nats === undefined ? undefined : await (await import("../src/link/nats.ts")).connectNats(flags.nats, "svc-gateway coordinator", natsAccess(flags));
    const store = await openKeyStore(flags);
    // the link is authenticated on loopback too: with no secret given, one is made in the data dir for gateways to share
    // (the data dir is made here too: with --database no store file made it)
    if (given === undefined || nats !== undefined) makePrivateDataDir(flags.dataDir, (line) => console.error(`svc-gateway: ${line}`));
    const made = given === undefined ? dataDirGatewaySecret(flags.dataDir) : undefined;
    // on NATS it signs what it publishes to gateways, which take nothing unsigned (DESIGN §11)
    const key = nats === undefined ? undefined : (await import("./coordinator/directory-key.ts")).directoryKey(flags.dataDir);
    const running = await startCoordinator({
      host: flags.host,
      port: flags.port,
      catalog: loadCatalog(flags.catalog),
      releaseKeysPath: flags.releaseKeys,
      rootsDir: flags.attestationRoots,
      enrollment: enrollmentLookup(store),
      liveEnrollments: liveEnrollments(store),
      openEnrollment: flags.openEnrollment,
      gatewaySecret: given ?? made!.secret,
      limits: queueLimits(flags),
      gate: gateLimits(flags),
      logger: await newLogger(),
      heartbeatMs: flags.heartbeatMs,
      rechallengeMs: flags.rechallengeMs,
      nats: nats && { connection: nats, epochs: store.claimEpochs!(), key: key! },
    });
    console.log(`svc-gateway: coordinator at ${running.url} (catalog ${running.url}/v1/catalog)`);
    if (key) console.log(`svc-gateway: on NATS it signs what it publishes with directory key ${key.publicKey}: list it in every gateway's --coordinator-keys file`);
    if (made) console.log(`svc-gateway: gateways link with the secret in ${made.path} (serve --gateway-secret-file ${made.path}, or the same --data-dir)`);
    console.log(`svc-gateway: health at ${running.url}/healthz, Prometheus metrics at ${running.url}/metrics (no key)`);
    if (flags.openEnrollment) console.log("svc-gateway: open enrollment: any machine that reaches this coordinator may serve; gateways should set --trust-floor hardware");
    // listening for a stop before saying ready: whatever reads the line may stop it at once
    onShutdownSignal(async () => {
      await running.close();
      await nats?.close();
      await store.close();
    }, (line) => console.log(`svc-gateway: ${line}`));
    console.log(readyLine({ ready: "svc-gateway coordinator", coordinator: running.url }));
  });
}
