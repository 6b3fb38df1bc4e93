// `svc-gateway`'s command line: serve here, coordinator in cli-coordinator.ts, the store and release commands in cli-admin.ts;
// built here so that bin/svc-gateway.ts stays a shim that parses argv, and scripts/config-reference.ts can read
// the options to write docs/configuration.md. The servers, sign-in and logging load in their commands' actions,
// so `--help` and the key commands start quickly.
import { Command, InvalidArgumentError, Option } from "commander";
import { parseOperatorKeys } from "./keys/auth.ts";
import { DEFAULT_MAX_KEYS_PER_USER } from "./keys/key-store.ts";
import { addAdminCommands, addUserCommands } from "./cli-admin.ts";
import { addAuditCommands } from "./cli-audit.ts";
import { addCoordinatorCommand, coordinatorOptions, gateLimits, natsAccess, newLogger, queueLimits, type CoordinatorFlags } from "./cli-coordinator.ts";
import { parseAdminEmails } from "./web/admins.ts";
import { DEFAULT_AUTH_FAILURES_PER_MINUTE } from "./keys/limiter.ts";
import { DEFAULT_KEEPALIVE_MS } from "../src/openai/sse-text.ts";
import { DEFAULT_HTTP_TIMEOUTS } from "./http/timeouts.ts";
import { DEFAULT_SESSION_DEADLINES } from "./directory/deadlines.ts";
import { DEFAULT_FAULT_POLICY } from "./directory/provider-faults.ts";
import { DEFAULT_HELD_LIMITS, MIB } from "./directory/held-bytes.ts";
import { nonNegativeInteger, port, positiveInteger, positiveNumber, oneLineUsageErrors, packageVersion } from "../src/process/cli-options.ts";
import { onShutdownSignal } from "../src/process/shutdown.ts";
import { readyLine } from "../src/process/ready-line.ts";
import { secretFileOption, takeSecret } from "../src/process/secret-option.ts";
import { TRUST_LEVELS, type TrustLevel } from "../src/receipt/rungs.ts";
import { auditIdentities, auditModels, duration } from "./audit/audit-flags.ts";
import { DEFAULT_AUDIT_IDENTITIES } from "./audit/identities.ts";
import { DEFAULT_AUDIT_PACING } from "./audit/scheduler.ts";

interface ServeFlags extends CoordinatorFlags {
  port: number;
  /** A URL with `--coordinator`; false with `--no-coordinator`. */
  coordinator?: string | false;
  coordinatorPort: number;
  coordinatorHost: string;
  trustFloor: TrustLevel;
  coordinatorKeys?: string;
  keepaliveMs: number;
  reasoningFormat: "none" | "parsed";
  shutdownGraceMs: number;
  headTimeoutMs: number;
  bodyTimeoutMs: number;
  oidcIssuer?: string;
  oidcClientId?: string;
  publicUrl?: string;
  adminEmails?: string[];
  keyConcurrency?: number;
  keyRpm?: number;
  keyTpm?: number;
  userConcurrency?: number;
  userRpm?: number;
  userTpm?: number;
  maxKeysPerUser: number;
  authFailuresPerMinute: number;
  trustProxy?: boolean;
  firstTokenTimeoutMs: number;
  idleTimeoutMs: number;
  sessionTimeoutMs: number;
  faultThreshold: number;
  faultWindowMs: number;
  faultRestMs: number;
  maxUnreadMb: number;
  maxHeldMb: number;
  audit?: boolean;
  auditModels?: Map<string, string>;
  auditCorpus?: string;
  auditRate: number;
  auditFloor: number;
  auditThreads: number;
  auditIdentities: number;
  auditRescorer?: string;
  auditDelay: number;
}



/** `--admin-emails`: a bad entry is a usage error naming it. */
function adminEmails(value: string): string[] {
  try {
    return parseAdminEmails(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}


/** The `svc-gateway` program, not yet parsed. */
export function gatewayProgram(): Command {
  const program = new Command("svc-gateway")
    .description("svc gateway: OpenAI-compatible routes in front of attested provider machines")
    .version(packageVersion())
    // usage errors are one line and exit USAGE_EXIT; set before the subcommands, which copy it
    .exitOverride()
    .configureOutput(oneLineUsageErrors("svc-gateway"));

  coordinatorOptions(
    program
      .command("serve")
      .description("serve the OpenAI routes, with an embedded coordinator unless --coordinator names one")
      .addHelpText(
        "after",
        "\nEnvironment:\n  SVC_OPERATOR_KEYS        comma-separated operator API keys (valid on every route; never shown on the settings page)\n" +
          "  SVC_OIDC_ISSUER, SVC_OIDC_CLIENT_ID, SVC_OIDC_CLIENT_SECRET, SVC_PUBLIC_URL, SVC_ADMIN_EMAILS, SVC_GATEWAY_SECRET  (the flags above)\n" +
          "  Secrets: pass them as SVC_* variables or --*-file FILE; on the command line other local users can read them in ps",
      )
      .option("--host <host>", "address to listen on", "127.0.0.1")
      .option("--port <port>", "gateway port (0 picks a free one)", port, 8080)
      .option("--coordinator <url>", "use this remote coordinator instead of embedding one")
      .option("--no-coordinator", "embed no coordinator: a gateway alone, serving the providers of every coordinator on --nats")
      .option("--coordinator-port <port>", "embedded coordinator port (0 picks a free one)", port, 8081)
      .option("--coordinator-host <host>", "address the embedded coordinator listens on, for agents on other machines", "127.0.0.1")
      .addOption(new Option("--trust-floor <rung>", "lowest trust rung to list and use").choices(TRUST_LEVELS).default("process"))
      .addOption(
        new Option("--coordinator-keys <file>", "with --nats: the directory keys of the coordinators whose messages this gateway takes (one hex Ed25519 public key per line; svc-gateway directory-key prints one); its own coordinator's is trusted besides")
          .env("SVC_COORDINATOR_KEYS"),
      )
      .option("--keepalive-ms <ms>", "quiet interval before an SSE `: keepalive` line", positiveNumber, DEFAULT_KEEPALIVE_MS)
      .addOption(
        new Option("--reasoning-format <format>", "for requests that name no reasoning_format: none keeps <think>…</think> in content, parsed returns it as reasoning_content")
          .choices(["none", "parsed"])
          .default("none"),
      )
      .option("--shutdown-grace-ms <ms>", "on SIGTERM/SIGINT, how long requests in flight may take to finish", nonNegativeInteger, 30_000)
      .option("--head-timeout-ms <ms>", "a request's line and headers must arrive within this", positiveInteger, DEFAULT_HTTP_TIMEOUTS.headMs)
      .option("--body-timeout-ms <ms>", "a whole request, body included, must arrive within this", positiveInteger, DEFAULT_HTTP_TIMEOUTS.bodyMs)
      .option("--first-token-timeout-ms <ms>", "a provider's first token must come within this of it starting the session (queue time apart), else 502 provider_error", positiveInteger, DEFAULT_SESSION_DEADLINES.firstTokenMs)
      .option("--idle-timeout-ms <ms>", "the longest a provider may go quiet between tokens, else 502 provider_error", positiveInteger, DEFAULT_SESSION_DEADLINES.idleMs)
      .option("--session-timeout-ms <ms>", "the longest a provider's session may run, else 502 provider_error", positiveInteger, DEFAULT_SESSION_DEADLINES.totalMs)
      .option("--fault-threshold <n>", "a provider's faults within --fault-window-ms that send it to rest out of rotation", positiveInteger, DEFAULT_FAULT_POLICY.threshold)
      .option("--fault-window-ms <ms>", "the window in which a provider's faults are counted", positiveInteger, DEFAULT_FAULT_POLICY.windowMs)
      .option("--fault-rest-ms <ms>", "how long a provider rests out of rotation (unpinned requests go elsewhere)", positiveInteger, DEFAULT_FAULT_POLICY.restMs)
      .option("--max-unread-mb <mb>", "what the gateway holds of one stream its caller has not read (MiB); past it the caller is treated as gone: session cancelled, connection closed", positiveNumber, DEFAULT_HELD_LIMITS.unreadPerSession / MIB)
      .option("--max-held-mb <mb>", "what the gateway holds for all sessions in flight, unread and answers kept for their receipts (MiB); past it the session holding the most is ended", positiveNumber, DEFAULT_HELD_LIMITS.total / MIB)
      .addOption(new Option("--oidc-issuer <url>", "OpenID Connect issuer people sign in with to make API keys").env("SVC_OIDC_ISSUER"))
      .addOption(new Option("--oidc-client-id <id>", "this gateway's client id at the issuer").env("SVC_OIDC_CLIENT_ID"))
      .addOption(new Option("--oidc-client-secret <secret>", "client secret (omit for a public client: PKCE only)").env("SVC_OIDC_CLIENT_SECRET"))
      .addOption(secretFileOption("--oidc-client-secret", "the client secret"))
      .addOption(new Option("--public-url <url>", "the address browsers reach this gateway at").env("SVC_PUBLIC_URL"))
      .addOption(
        new Option("--admin-emails <list>", "comma-separated emails of signed-in users who see every user's usage at /settings/usage")
          .env("SVC_ADMIN_EMAILS")
          .argParser(adminEmails),
      )
      .option("--key-concurrency <n>", "each API key's limit on requests in flight (default: unlimited)", positiveInteger)
      .option("--key-rpm <n>", "each API key's limit on requests per minute (default: unlimited)", positiveInteger)
      .option("--key-tpm <n>", "each API key's limit on tokens per minute, from receipts (default: unlimited)", positiveInteger)
      .option("--user-concurrency <n>", "each user's limit on requests in flight over all their keys (default: unlimited)", positiveInteger)
      .option("--user-rpm <n>", "each user's limit on requests per minute over all their keys (default: unlimited)", positiveInteger)
      .option("--user-tpm <n>", "each user's limit on tokens per minute over all their keys, from receipts (default: unlimited)", positiveInteger)
      .option("--max-keys-per-user <n>", "live API keys one user may hold; past it, creating one is refused", positiveInteger, DEFAULT_MAX_KEYS_PER_USER)
      .option("--auth-failures-per-minute <n>", "failed authentications a client address may make per minute before 429s", positiveInteger, DEFAULT_AUTH_FAILURES_PER_MINUTE)
      .option("--trust-proxy", "client address from the last X-Forwarded-For entry: only behind one proxy that appends it")
      .option("--audit", "seal every request complete: top_logprobs (the caller's, else 0) and a seed (the caller's, else a fresh one), so every receipt commits to every token's logprob and audits look like callers' requests; logprobs are shown only to callers who ask")
      .option("--audit-models <list>", "audit providers of these aliases against the operator's reference copies, alias=PATH,… (each file's SHA-256 checked against the catalog); implies --audit and needs --audit-corpus", auditModels)
      .option("--audit-corpus <file>", "the audits' prompts: the operator's own private JSONL, one {id, kind, route, body} a line (body: an OpenAI body without model)")
      .option("--audit-rate <n>", "audit a provider after one in this many of its ordinary sessions, at random", positiveInteger, DEFAULT_AUDIT_PACING.rate)
      .option("--audit-floor <duration>", "and at least once within this (30–60 min at 60m), at its next ordinary session", duration, DEFAULT_AUDIT_PACING.floorMs)
      .option("--audit-delay <duration>", "the mean of the random (exponential) delay between the session that draws an audit and the audit", duration, DEFAULT_AUDIT_PACING.delayMeanMs)
      .option("--audit-identities <n>", "send audits under this many keys of a store user svc-auditor, one at random per audit, each retired after 1–14 days: a cache owner as varied as callers'", auditIdentities, DEFAULT_AUDIT_IDENTITIES)
      .option("--audit-threads <n>", "threads of the reference pass (recorded with each audit)", positiveInteger, 1)
      .option("--audit-rescorer <cmd>", "the reference pass's command instead of this package's own svc-agent rescore (it gets --model alias=PATH … --threads N and speaks JSON lines)"),
  ).action(async (flags: ServeFlags, command: Command) => {
    const [{ serve }, { oidcSettings }, { redactNats }] = await Promise.all([import("./start.ts"), import("./web/oidc.ts"), import("../src/link/nats.ts")]);
    const gatewaySecret = takeSecret(command, "--gateway-secret", "SVC_GATEWAY_SECRET", "svc-gateway");
    const oidcClientSecret = takeSecret(command, "--oidc-client-secret", "SVC_OIDC_CLIENT_SECRET", "svc-gateway");
    const operatorKeys = parseOperatorKeys(process.env.SVC_OPERATOR_KEYS);
    const oidc =
      flags.oidcIssuer === undefined
        ? undefined
        : oidcSettings({ issuer: flags.oidcIssuer, clientId: flags.oidcClientId, clientSecret: oidcClientSecret, publicUrl: flags.publicUrl });
    const running = await serve({
      host: flags.host,
      port: flags.port,
      coordinatorUrl: flags.coordinator === false ? undefined : flags.coordinator,
      nats: flags.nats,
      natsAccess: natsAccess(flags),
      noCoordinator: flags.coordinator === false,
      coordinatorKeysPath: flags.coordinatorKeys,
      coordinatorPort: flags.coordinatorPort,
      coordinatorHost: flags.coordinatorHost,
      gatewaySecret,
      openEnrollment: flags.openEnrollment,
      queueLimits: queueLimits(flags),
      coordinatorGate: gateLimits(flags),
      catalogPath: flags.catalog,
      releaseKeysPath: flags.releaseKeys,
      rootsDir: flags.attestationRoots,
      floor: flags.trustFloor,
      dataDir: flags.dataDir,
      database: flags.database,
      operatorKeys,
      oidc,
      adminEmails: flags.adminEmails,
      keepaliveMs: flags.keepaliveMs,
      reasoningFormat: flags.reasoningFormat,
      limits: {
        keyDefaults: { concurrency: flags.keyConcurrency, rpm: flags.keyRpm, tpm: flags.keyTpm },
        userDefaults: { concurrency: flags.userConcurrency, rpm: flags.userRpm, tpm: flags.userTpm },
        authFailuresPerMinute: flags.authFailuresPerMinute,
        trustProxy: flags.trustProxy === true,
      },
      maxKeysPerUser: flags.maxKeysPerUser,
      httpTimeouts: { headMs: flags.headTimeoutMs, bodyMs: flags.bodyTimeoutMs },
      sessionDeadlines: { firstTokenMs: flags.firstTokenTimeoutMs, idleMs: flags.idleTimeoutMs, totalMs: flags.sessionTimeoutMs },
      faultPolicy: { threshold: flags.faultThreshold, windowMs: flags.faultWindowMs, restMs: flags.faultRestMs },
      heldLimits: { unreadPerSession: Math.round(flags.maxUnreadMb * MIB), total: Math.round(flags.maxHeldMb * MIB) },
      audit: flags.audit === true || flags.auditModels !== undefined,
      ...(flags.auditModels === undefined
        ? {}
        : {
            auditor: {
              models: flags.auditModels,
              corpusPath: flags.auditCorpus,
              pacing: { rate: flags.auditRate, floorMs: flags.auditFloor, delayMeanMs: flags.auditDelay },
              threads: flags.auditThreads,
              identities: flags.auditIdentities,
              rescorer: flags.auditRescorer,
              catalogPath: flags.catalog,
            },
          }),
      heartbeatMs: flags.heartbeatMs,
      rechallengeMs: flags.rechallengeMs,
      logger: await newLogger(),
    });
    console.log(`svc-gateway: OpenAI routes at ${running.url}/v1 (trust floor: ${flags.trustFloor})`);
    if (flags.coordinator === false) console.log(`svc-gateway: no coordinator here: this gateway serves the providers of every coordinator on NATS ${redactNats(flags.nats!)}`);
    else {
      const where = running.embedded ? "embedded coordinator" : "remote coordinator";
      console.log(`svc-gateway: ${where} at ${running.coordinatorUrl} (catalog ${running.coordinatorUrl}/v1/catalog)${flags.nats === undefined ? "" : `, on NATS ${redactNats(flags.nats)}`}`);
      if (running.directoryKey) console.log(`svc-gateway: on NATS the coordinator signs what it publishes with directory key ${running.directoryKey}: list it in every other gateway's --coordinator-keys file`);
      console.log(`svc-gateway: agents join with: svc-agent start --coordinator ${running.coordinatorUrl} --token-file FILE (a token from svc-gateway providers enroll, saved to FILE)`);
    }
    if (flags.openEnrollment) console.log(`svc-gateway: open enrollment: any machine that reaches the coordinator may serve${flags.trustFloor === "hardware" ? "" : `; WARNING: with trust floor ${flags.trustFloor} such a machine reads prompts, so set --trust-floor hardware`}`);
    if (running.signIn) {
      console.log(`svc-gateway: settings page at ${running.signIn.settingsUrl} (sign-in through ${running.signIn.issuer})`);
      console.log(`svc-gateway: register this redirect URI with the issuer: ${running.signIn.redirectUri}`);
    } else {
      console.log("svc-gateway: sign-in is not configured (--oidc-issuer): no settings page; operator keys and the key store's user keys (svc-gateway keys create) work");
      if (operatorKeys.length === 0) console.log("svc-gateway: no operator keys: set SVC_OPERATOR_KEYS=key1,key2; without them only user keys made with svc-gateway keys create work");
    }
    console.log(`svc-gateway: health at ${running.url}/healthz, Prometheus metrics at ${running.url}/metrics (no key)`);
    // listening for a stop before saying ready: whatever reads the line may stop it at once
    onShutdownSignal(async () => {
      console.log(`svc-gateway: shutting down; requests in flight have ${flags.shutdownGraceMs} ms to finish`);
      await running.close(flags.shutdownGraceMs);
      console.log("svc-gateway: stopped");
    }, (line) => console.log(`svc-gateway: ${line}`));
    console.log(readyLine({ ready: "svc-gateway serve", gateway: running.url, coordinator: running.coordinatorUrl }));
  });

  addCoordinatorCommand(program);

  addAdminCommands(program);
  addUserCommands(program);
  addAuditCommands(program);
  return program;
}
