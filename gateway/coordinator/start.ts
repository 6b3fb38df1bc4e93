// Starts a coordinator on a port: what `svc-gateway coordinator` runs alone and `svc-gateway serve` embeds.
import type { Logger } from "pino";
import type { TrustAnchors } from "../../src/trust/attestation.ts";
import type { Catalog } from "../../src/catalog.ts";
import { loadReleaseKeys, loadRoots } from "../../src/trust/anchor-files.ts";
import { SecretSet } from "../http/bearer.ts";
import { closeServer, listen } from "../http/listen.ts";
import type { Enrollment } from "./admission.ts";
import type { QueueLimits } from "./registry.ts";
import type { GateLimits } from "./connection-gate.ts";
import { createCoordinatorServer, type CoordinatorServer, type NatsSide } from "./server.ts";

export interface StartCoordinatorOptions {
  host: string;
  port: number;
  catalog: Catalog;
  /** `--release-keys FILE`: release keys whose manifests earn the transparent rung. */
  releaseKeysPath?: string;
  /** `--attestation-roots DIR`: roots whose chains earn the hardware rung. */
  rootsDir?: string;
  /** Looks up a provider enrollment token in the operator's key store; without it no token is valid. */
  enrollment?: (token: string) => Promise<Enrollment | undefined>;
  /** The ids of the live enrollment tokens, read every second to disconnect revoked agents. */
  liveEnrollments?: () => Promise<ReadonlySet<string>>;
  /** `--open-enrollment`: any machine may join as a provider. */
  openEnrollment?: boolean;
  /** `--gateway-secret`, or the data dir's: what gateways must present to link, loopback included. */
  gatewaySecret: string;
  limits?: Partial<QueueLimits>;
  /** Caps and the handshake deadline for connections not yet proven. */
  gate?: GateLimits;
  logger: Logger;
  heartbeatMs?: number;
  rechallengeMs?: number;
  /** `--nats`: gateways on the NATS fabric reach it too; claims of its providers are ordered by `epochs`. */
  nats?: NatsSide;
}

export interface RunningCoordinator {
  url: string;
  /** A link for the gateway embedded in this process (gateway/fabric/local.ts). */
  openLocalLink: CoordinatorServer["openLocalLink"];
  close(): Promise<void>;
}

export function trustAnchors(releaseKeysPath: string | undefined, rootsDir: string | undefined): TrustAnchors {
  return {
    releaseKeys: releaseKeysPath === undefined ? new Set() : flagged("--release-keys", () => loadReleaseKeys(releaseKeysPath)),
    roots: rootsDir === undefined ? [] : flagged("--attestation-roots", () => loadRoots(rootsDir)),
  };
}

/** Names the flag in a load error, so a mistyped path says which option it came from. */
function flagged<T>(flag: string, load: () => T): T {
  try {
    return load();
  } catch (err) {
    throw new Error(`${flag}: ${(err as Error).message}`);
  }
}

export async function startCoordinator(options: StartCoordinatorOptions): Promise<RunningCoordinator> {
  const { server, dropLinks, openLocalLink } = createCoordinatorServer({
    catalog: options.catalog,
    anchors: trustAnchors(options.releaseKeysPath, options.rootsDir),
    admission: {
      enrollment: options.enrollment ?? (() => Promise.resolve(undefined)),
      liveEnrollments: options.liveEnrollments ?? (() => Promise.resolve(new Set())),
      openEnrollment: options.openEnrollment ?? false,
      gatewaySecret: new SecretSet([options.gatewaySecret]),
    },
    limits: options.limits,
    gate: options.gate,
    logger: options.logger,
    heartbeatMs: options.heartbeatMs,
    rechallengeMs: options.rechallengeMs,
    nats: options.nats,
  });
  const url = await listen(server, options.port, options.host, "coordinator");
  return {
    url,
    openLocalLink,
    close: async () => {
      dropLinks();
      await closeServer(server);
    },
  };
}
