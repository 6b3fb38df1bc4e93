// `svc-gateway serve`: wires catalog, coordinator link, keys and logger into the gateway server, with an
// embedded coordinator on its own port unless `--coordinator URL` names a remote one.
import type { ReasoningFormat } from "../src/openai/tools-request.ts";
import type { Logger } from "pino";
import type { Catalog } from "../src/catalog.ts";
import { loadCatalog } from "../src/catalog-file.ts";
import { RequestParser } from "./openai/request-parser.ts";
import { ProviderFaults, type FaultPolicy } from "./directory/provider-faults.ts";
import type { HeldLimits } from "./directory/held-bytes.ts";
import type { TrustLevel } from "../src/receipt/rungs.ts";
import { checkCoordinatorUrl } from "../src/link/ws-url.ts";
import { Authenticator, OperatorKeys } from "./keys/auth.ts";
import { BODY_LIMIT_BYTES } from "./http/body.ts";
import { LocalFabric } from "./fabric/local.ts";
import { WebSocketFabric } from "./fabric/websocket.ts";
import { NatsFabric } from "./fabric/nats.ts";
import { CoordinatorKeys } from "./fabric/coordinator-keys.ts";
import { directoryKey } from "./coordinator/directory-key.ts";
import { packageVersion, USAGE_EXIT } from "../src/process/cli-options.ts";
import { auditKey } from "./audit/audit-key.ts";
import type { Signer } from "../src/crypto/signing.ts";
import { pollAudits } from "./audit/audit-poll.ts";
import { AuditRecords } from "./audit/records.ts";
import { connectNats, redactNats, type NatsAccess } from "../src/link/nats.ts";
import { CoordinatorClient } from "./directory/coordinator-client.ts";
import type { SessionDeadlines } from "./directory/deadlines.ts";
import { DEFAULT_HEARTBEAT_MS } from "../src/link/heartbeat.ts";
import { startCoordinator, trustAnchors, type RunningCoordinator } from "./coordinator/start.ts";
import type { Server as NetServer } from "node:net";
import { closeServer, reservePort, serveOn } from "./http/listen.ts";
import type { HttpTimeouts } from "./http/timeouts.ts";
import { GatewayMetrics } from "./metrics.ts";
import { createGatewayServer } from "./routes.ts";
import { DEFAULT_KEEPALIVE_MS } from "../src/openai/sse-text.ts";
import { makePrivateDataDir } from "./keys/private-files.ts";
import type { KeyStore } from "./keys/key-store.ts";
import { enrollmentLookup, liveEnrollments } from "./keys/provider-tokens.ts";
import { dataDirGatewaySecret, existingGatewaySecret, GATEWAY_SECRET_FILE } from "./keys/gateway-secret.ts";
import { checkNatsDatabase, openKeyStore } from "./keys/open-store.ts";
import type { QueueLimits } from "./coordinator/registry.ts";
import type { GateLimits } from "./coordinator/connection-gate.ts";
import { UserKeys } from "./keys/user-keys.ts";
import { DEFAULT_LIMIT_SETTINGS, Limiter, type LimitSettings } from "./keys/limiter.ts";
import { leasedBudgets } from "./keys/budget-lease.ts";
import { NewKeyFlash } from "./web/new-key-flash.ts";
import { Admins } from "./web/admins.ts";
import { OidcClient, type OidcSettings } from "./web/oidc.ts";
import type { SignIn } from "./web/routes.ts";
import { loadCookieSecret, Sessions } from "./web/session.ts";
import { cacheOwners, cacheScopes, scopeSecret } from "./keys/cache-scope.ts";
import { AuditIdentities } from "./audit/identities.ts";
import { REAL_DICE } from "./audit/scheduler.ts";
import { checkAuditor, startAuditor, type AuditorSettings } from "./audit/start-auditor.ts";
import type { Gateway } from "./context.ts";

export interface ServeOptions {
  host: string;
  port: number;
  /** A remote coordinator; without it one is embedded on `coordinatorPort`. */
  coordinatorUrl?: string;
  /** `--nats URL[,URL]`: gateway and embedded coordinator both speak on this NATS cluster (gateway/fabric/nats.ts). */
  nats?: string;
  /** `--nats-creds` and the `--nats-tls-*` files. */
  natsAccess?: NatsAccess;
  /** `--no-coordinator`: a gateway alone on the NATS fabric, serving the providers of every coordinator there. */
  noCoordinator?: boolean;
  /**
   * `--coordinator-keys FILE`: the directory keys of the coordinators on NATS whose messages this gateway takes
   * (its own embedded coordinator's is trusted besides); a gateway alone on NATS needs it.
   */
  coordinatorKeysPath?: string;
  coordinatorPort: number;
  /** Where the embedded coordinator listens (`--coordinator-host`): loopback unless opened deliberately. */
  coordinatorHost?: string;
  /**
   * `--gateway-secret`: presented to a remote coordinator, or taken by the embedded one. Unset, the data dir's
   * `gateway-secret` is used, made there for an embedded coordinator; a remote one without it is an error.
   */
  gatewaySecret?: string;
  /** `--open-enrollment`: the embedded coordinator admits any machine as a provider. */
  openEnrollment?: boolean;
  queueLimits?: Partial<QueueLimits>;
  /** The embedded coordinator's caps and handshake deadline for connections not yet proven. */
  coordinatorGate?: GateLimits;
  catalogPath?: string;
  /** The trust anchors this gateway checks every provider's evidence under, and its embedded coordinator grants by. */
  releaseKeysPath?: string;
  rootsDir?: string;
  floor: TrustLevel;
  dataDir: string;
  /** `--database`: the PostgreSQL key store replicas share; without it, the SQLite file under `dataDir`. */
  database?: string;
  operatorKeys: string[];
  /** Sign-in for the settings page; without it there is none, and keys come from `svc-gateway keys create` alone. */
  oidc?: OidcSettings;
  /** `--admin-emails`: signed-in users who see every user's usage at /settings/usage (lower-cased). */
  adminEmails?: string[];
  keepaliveMs?: number;
  /** What a request that names no reasoning_format gets (default "none": reasoning stays in content, SPEC §1). */
  reasoningFormat?: ReasoningFormat;
  /** Per-key and per-user rate limits and failed-authentication slowdown (default: DEFAULT_LIMIT_SETTINGS). */
  limits?: LimitSettings;
  /** `--max-keys-per-user`: live keys one user may hold (default DEFAULT_MAX_KEYS_PER_USER). */
  maxKeysPerUser?: number;
  /** Slowloris limits on the request head and body. */
  httpTimeouts?: HttpTimeouts;
  heartbeatMs?: number;
  rechallengeMs?: number;
  /** A session's deadlines for its provider (default: DEFAULT_SESSION_DEADLINES). */
  sessionDeadlines?: SessionDeadlines;
  /** How many faults, in what window, send a provider to rest, and for how long (default: DEFAULT_FAULT_POLICY). */
  faultPolicy?: FaultPolicy;
  /** What the gateway holds for sessions in flight: unread per session, and in all (default: DEFAULT_HELD_LIMITS). */
  heldLimits?: HeldLimits;
  /** `--audit`: every request sealed complete (logprobs and a seed), so every receipt commits to every token's logprob. */
  audit?: boolean;
  /** `--audit-models` and the flags beside it: the auditor (gateway/audit/). */
  auditor?: AuditorSettings;
  logger: Logger;
}

export interface RunningGateway {
  url: string;
  coordinatorUrl: string;
  /** Whether the coordinator runs in this process. */
  embedded: boolean;
  /** On NATS, the public half of the directory key the embedded coordinator signs with (hex). */
  directoryKey?: string;
  catalog: Catalog;
  /** Where people sign in and make keys, when an identity provider is configured. */
  signIn?: { settingsUrl: string; redirectUri: string; issuer: string };
  /** Issues a provider enrollment token in this gateway's key store (what `providers enroll` does); returns its secret. */
  enrollProvider(name: string, expiresAt: number | null): Promise<{ id: string; secret: string }>;
  /** Revokes an enrollment token by id (what `providers revoke` does); false when no live token has that id. */
  revokeProvider(id: string): Promise<boolean>;
  /** Stops accepting, gives requests in flight up to `graceMs` (default 0) to finish, then closes everything. */
  close(graceMs?: number): Promise<void>;
}

/**
 * The store's user keys, honoured whether or not people can sign in here to make more: `svc-gateway keys create`
 * makes them too, and an operator expects a key it made to work, as LiteLLM's and OpenRouter's do. Turning sign-in
 * off closes the settings page, not the keys; `keys revoke` does that.
 */
async function openUserKeys(store: KeyStore, logger: Logger, maxKeysPerUser?: number): Promise<UserKeys> {
  const users = new UserKeys(store, (err) => logger.error({ err }, "could not record key usage"), undefined, maxKeysPerUser);
  // a key revoked by another replica, or by `svc-gateway keys revoke`, leaves this gateway's cache too
  await users.watch();
  return users;
}

/** The cookies and OIDC client behind the settings page, over the store's user keys. */
function openSignIn(settings: OidcSettings, users: UserKeys, dataDir: string, logger: Logger, admins: Admins): SignIn {
  const sessions = new Sessions(loadCookieSecret(dataDir), users.store, settings.publicUrl.protocol === "https:");
  const oidc = new OidcClient(settings, logger);
  oidc.warmUp();
  return { oidc, sessions, users, flash: new NewKeyFlash(), admins };
}

/** The data dir's gateway secret: made for an embedded coordinator, required from a remote one's operator. */
function linkSecret(dataDir: string, coordinatorUrl: string | undefined): string {
  if (coordinatorUrl === undefined) return dataDirGatewaySecret(dataDir).secret;
  const shared = existingGatewaySecret(dataDir);
  if (shared === undefined) {
    throw new Error(
      `--coordinator ${coordinatorUrl}: no gateway secret; pass --gateway-secret-file FILE (the coordinator's DATA_DIR/${GATEWAY_SECRET_FILE}) or SVC_GATEWAY_SECRET`,
    );
  }
  return shared;
}

/** `--coordinator-keys` goes with --nats, and a gateway alone there needs it: one line naming the flag, exit 64. */
function checkCoordinatorKeys(options: ServeOptions): void {
  const usage = (message: string) => Object.assign(new Error(message), { exitCode: USAGE_EXIT });
  if (options.coordinatorKeysPath !== undefined && options.nats === undefined) throw usage("--coordinator-keys: only a gateway on NATS (--nats) takes coordinators' directory keys");
  if (options.nats !== undefined && options.noCoordinator && options.coordinatorKeysPath === undefined) {
    throw usage("--coordinator-keys: a gateway alone on NATS takes no coordinator's message unsigned; pass --coordinator-keys FILE, the coordinators' directory keys (svc-gateway directory-key --data-dir DIR prints one)");
  }
}

export async function serve(options: ServeOptions): Promise<RunningGateway> {
  if (options.coordinatorUrl !== undefined) checkCoordinatorUrl(options.coordinatorUrl);
  if (options.noCoordinator && options.nats === undefined) throw new Error("--no-coordinator: a gateway without a coordinator needs --nats URL to reach the coordinators there");
  if (options.nats !== undefined && options.coordinatorUrl !== undefined) throw new Error("--nats: a gateway on NATS reaches every coordinator there; drop --coordinator");
  if (options.nats !== undefined && !options.noCoordinator) checkNatsDatabase(options);
  checkCoordinatorKeys(options);
  // the gateway's port before anything that logs (the coordinator link): a port in use is the one line said
  const reserved = await reservePort(options.port, options.host, "gateway");
  try {
    return await serveOnReserved(options, reserved);
  } catch (err) {
    if (reserved.listening) reserved.close();
    throw err;
  }
}

async function serveOnReserved(options: ServeOptions, reserved: NetServer): Promise<RunningGateway> {
  const catalog = loadCatalog(options.catalogPath);
  // the reference copies hashed and the corpus read before anything listens: a bad one is the flag's error
  const checkedAuditor = options.auditor && (await checkAuditor(options.auditor, catalog));
  const anchors = trustAnchors(options.releaseKeysPath, options.rootsDir);
  makePrivateDataDir(options.dataDir, (line) => options.logger.warn(line));
  const heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  // users, API keys and provider enrollment tokens: the settings page and the embedded coordinator share it
  // on NATS, the embedded coordinator signs what it publishes with the data dir's directory key, which this gateway trusts
  const signing = options.nats !== undefined && !options.noCoordinator ? directoryKey(options.dataDir) : undefined;
  const coordinatorKeys = options.nats === undefined ? undefined : new CoordinatorKeys(options.coordinatorKeysPath, signing ? [signing.publicKey] : []);
  if (coordinatorKeys?.size === 0) options.logger.warn({ file: options.coordinatorKeysPath }, "--coordinator-keys lists no key: this gateway takes no coordinator's message on NATS until the file lists one");
  const nats = options.nats === undefined ? undefined : await connectNats(options.nats, "svc-gateway serve", options.natsAccess);
  const store = await openKeyStore(options, (err) => options.logger.warn({ err: err.message }, "key store connection lost; it reconnects on the next use"));
  let coordinator: RunningCoordinator | undefined;
  const gatewaySecret = options.gatewaySecret ?? linkSecret(options.dataDir, options.coordinatorUrl);
  if (options.openEnrollment && options.coordinatorUrl === undefined && options.floor !== "hardware") {
    options.logger.warn({ floor: options.floor }, "open enrollment with a trust floor below hardware: any machine that reaches the coordinator can serve this gateway's requests and read their prompts; set --trust-floor hardware");
  }
  let scopeKey: string;
  // the key that signs failed audits' evidence: every replica on one store has the same
  let signer: Signer | undefined;
  try {
    scopeKey = await scopeSecret(store, gatewaySecret);
    if (options.audit === true || options.auditor !== undefined) signer = await auditKey(options.dataDir, store);
    if (options.coordinatorUrl === undefined && !options.noCoordinator) {
      coordinator = await startCoordinator({
        host: options.coordinatorHost ?? "127.0.0.1",
        port: options.coordinatorPort,
        catalog,
        releaseKeysPath: options.releaseKeysPath,
        rootsDir: options.rootsDir,
        enrollment: enrollmentLookup(store),
        liveEnrollments: liveEnrollments(store),
        openEnrollment: options.openEnrollment,
        gatewaySecret,
        limits: options.queueLimits,
        gate: options.coordinatorGate,
        logger: options.logger,
        heartbeatMs,
        rechallengeMs: options.rechallengeMs,
        nats: nats && { connection: nats, epochs: store.claimEpochs!(), key: signing! },
      });
    }
  } catch (err) {
    await store.close();
    await nats?.close();
    throw err;
  }
  const coordinatorUrl = options.coordinatorUrl ?? coordinator?.url ?? redactNats(options.nats!);
  // an operator key on /settings/usage is checked as on the API, failures counted per address; `limiter` and
  // `auth` exist by the time a request asks
  const admins: Admins = new Admins(options.adminEmails ?? [], async (req) => (await limiter.authenticate(req, () => auth.authenticate(req.headers.authorization))).kind === "operator");
  const users = await openUserKeys(store, options.logger.child({ role: "keys" }), options.maxKeysPerUser);
  const signIn = options.oidc && openSignIn(options.oidc, users, options.dataDir, options.logger.child({ role: "sign-in" }), admins);
  // on NATS every coordinator is reached there, its own too; else the embedded one in-process, a remote one over its WebSocket
  const fabric = nats
    ? new NatsFabric(nats, redactNats(options.nats!), { trusted: (key) => coordinatorKeys!.has(key), log: options.logger.child({ role: "gateway" }) })
    : coordinator
      ? new LocalFabric(coordinator)
      : new WebSocketFabric({ url: coordinatorUrl, heartbeatMs, secret: gatewaySecret });
  const metrics = new GatewayMetrics(() => directory.connected);
  const directory = new CoordinatorClient(fabric, options.logger.child({ role: "gateway" }), anchors, {
    deadlines: options.sessionDeadlines,
    faults: new ProviderFaults(options.faultPolicy),
    onFault: (kind, rested) => metrics.providerFault(kind, rested),
    held: options.heldLimits,
  });
  const leases = store.budgetLeases?.();
  const limiter = new Limiter(options.limits ?? DEFAULT_LIMIT_SETTINGS, {
    overrides: (principal) => (principal.kind === "user" ? users.limits(principal.keyId) : undefined),
    userOverrides: (userId) => users.userLimits(userId),
    limited: (limit) => metrics.rateLimited(limit),
  }, leases && leasedBudgets(leases, (err) => options.logger.warn({ err: (err as Error).message }, "rate limits: the shared budgets cannot be reached; each gateway counts its own share of every limit until they can")));
  const auth = new Authenticator(new OperatorKeys(options.operatorKeys), users);
  const reasoningFormat = options.reasoningFormat ?? "none";
  const parser = new RequestParser(catalog, reasoningFormat);
  const gateway: Gateway = {
    catalog,
    directory,
    metrics,
    floor: options.floor,
    anchors,
    auth,
    limiter,
    signIn,
    users,
    keepaliveMs: options.keepaliveMs ?? DEFAULT_KEEPALIVE_MS,
    reasoningFormat,
    bodyLimitBytes: BODY_LIMIT_BYTES,
    scopeOf: cacheScopes(scopeKey),
    ownerOf: cacheOwners(scopeKey),
    parser,
    completeRequests: options.audit === true || options.auditor !== undefined,
  };
  // every gateway reads the audits on the store, so a failure any replica found bars the provider here too
  const auditRecords = new AuditRecords();
  const auditLog = options.logger.child({ role: "auditor" });
  const auditPoll = pollAudits(store.audits(), auditRecords, (bars, returned) => directory.faults.syncBars(bars, returned), (err) => auditLog.warn({ err: err.message }, "audits: the key store cannot be read; the bars read last stand until it can"));
  directory.auditHint = () => auditPoll.hint();
  // the audits' identities: keys of the store's svc-auditor user, as a caller's are its own
  const identities = checkedAuditor && (await AuditIdentities.open(store, checkedAuditor.settings.identities, REAL_DICE));
  const audits = checkedAuditor && identities && startAuditor(gateway, directory, checkedAuditor, identities, auditRecords, {
    store: store.audits(), signer: signer!, build: packageVersion(), subjectOf: (id) => directory.faults.subjectOf(id), share: (id) => directory.shareAudit(id),
  }, auditLog);
  if (signer) gateway.audits = { ...(audits ? { auditor: audits.auditor, shapes: audits.shapes } : {}), records: auditRecords, barOf: (id) => directory.barOf(id), key: signer.publicKey, store: store.audits() };
  await auditPoll.ready;
  const { server: gatewayServer, drain } = createGatewayServer(gateway, options.logger, options.httpTimeouts);
  const shutdown = async (graceMs = 0) => {
    await drain(graceMs);
    await closeServer(gatewayServer);
    await parser.close();
    auditPoll.stop();
    await audits?.close();
    await directory.close();
    await coordinator?.close();
    await nats?.close();
    await users.close();
    await store.close();
  };
  try {
    const url = await serveOn(gatewayServer, reserved);
    const signInInfo = signIn && {
      settingsUrl: `${signIn.oidc.settings.publicUrl.href.replace(/\/+$/, "")}/settings`,
      redirectUri: signIn.oidc.redirectUri,
      issuer: signIn.oidc.settings.issuer.href,
    };
    const enrollProvider = async (name: string, expiresAt: number | null) => {
      const { token, secret } = await store.enrollProvider(name, expiresAt);
      return { id: token.id, secret };
    };
    const revokeProvider = (id: string) => store.revokeProviderToken(id);
    return {
      url, coordinatorUrl, embedded: coordinator !== undefined, ...(signing ? { directoryKey: signing.publicKey } : {}), catalog, signIn: signInInfo, enrollProvider, revokeProvider, close: shutdown,
    };
  } catch (err) {
    await shutdown();
    throw err;
  }
}
