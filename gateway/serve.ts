// `svc-gateway serve`: wires catalog, coordinator link, keys and logger into the gateway server, with an
// embedded coordinator on its own port unless `--coordinator URL` names a remote one.
import { mkdirSync } from "node:fs";
import type { Logger } from "pino";
import { loadCatalog, type Catalog } from "../src/catalog.ts";
import type { TrustLevel } from "../src/trust.ts";
import { checkCoordinatorUrl } from "../src/ws-url.ts";
import { OperatorKeys } from "./auth.ts";
import { BODY_LIMIT_BYTES } from "./body.ts";
import { CoordinatorClient } from "./coordinator-client.ts";
import { DEFAULT_HEARTBEAT_MS } from "../src/heartbeat.ts";
import { startCoordinator, type RunningCoordinator } from "./coordinator/start.ts";
import { closeServer, listen } from "./listen.ts";
import { createGatewayServer } from "./server.ts";
import { DEFAULT_KEEPALIVE_MS } from "./sse.ts";

export interface ServeOptions {
  host: string;
  port: number;
  /** A remote coordinator; without it one is embedded on `coordinatorPort`. */
  coordinatorUrl?: string;
  coordinatorPort: number;
  catalogPath?: string;
  /** The embedded coordinator's trust anchors. */
  releaseKeysPath?: string;
  rootsDir?: string;
  floor: TrustLevel;
  dataDir: string;
  operatorKeys: string[];
  keepaliveMs?: number;
  heartbeatMs?: number;
  rechallengeMs?: number;
  logger: Logger;
}

export interface RunningGateway {
  url: string;
  coordinatorUrl: string;
  /** Whether the coordinator runs in this process. */
  embedded: boolean;
  catalog: Catalog;
  close(): Promise<void>;
}

export async function serve(options: ServeOptions): Promise<RunningGateway> {
  if (options.coordinatorUrl !== undefined) checkCoordinatorUrl(options.coordinatorUrl);
  const catalog = loadCatalog(options.catalogPath);
  mkdirSync(options.dataDir, { recursive: true });
  const heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  let coordinator: RunningCoordinator | undefined;
  if (options.coordinatorUrl === undefined) {
    coordinator = await startCoordinator({
      host: options.host,
      port: options.coordinatorPort,
      catalog,
      releaseKeysPath: options.releaseKeysPath,
      rootsDir: options.rootsDir,
      logger: options.logger,
      heartbeatMs,
      rechallengeMs: options.rechallengeMs,
    });
  }
  const coordinatorUrl = options.coordinatorUrl ?? coordinator!.url;
  const directory = new CoordinatorClient(coordinatorUrl, options.logger.child({ role: "gateway" }), heartbeatMs);
  const gatewayServer = createGatewayServer(
    {
      catalog,
      directory,
      floor: options.floor,
      keys: new OperatorKeys(options.operatorKeys),
      keepaliveMs: options.keepaliveMs ?? DEFAULT_KEEPALIVE_MS,
      bodyLimitBytes: BODY_LIMIT_BYTES,
    },
    options.logger,
  );
  const shutdown = async () => {
    await closeServer(gatewayServer);
    await directory.close();
    await coordinator?.close();
  };
  try {
    const url = await listen(gatewayServer, options.port, options.host, "gateway");
    return { url, coordinatorUrl, embedded: coordinator !== undefined, catalog, close: shutdown };
  } catch (err) {
    await shutdown();
    throw err;
  }
}
