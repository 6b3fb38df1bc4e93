// `svc-gateway serve`: wires catalog, directory, keys and logger into the gateway and coordinator servers
// and starts listening; what the command line and `npm start` call.
import { mkdirSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Logger } from "pino";
import { Engine } from "../agent/engine.ts";
import { memoryGb } from "../agent/machine.ts";
import { ModelStore, parseModelOverrides } from "../agent/model-store.ts";
import { VerifiedFiles } from "../agent/verified-files.ts";
import { loadCatalog, type Catalog } from "../src/catalog.ts";
import { ApiError } from "../src/errors.ts";
import { OperatorKeys } from "./auth.ts";
import { BODY_LIMIT_BYTES } from "./body.ts";
import { createCoordinatorServer } from "./coordinator/server.ts";
import type { Directory, TrustLevel } from "./directory.ts";
import { LocalDirectory, type LocalFaults } from "./local-directory.ts";
import { createGatewayServer } from "./server.ts";
import { DEFAULT_KEEPALIVE_MS } from "./sse.ts";

export interface ServeOptions {
  host: string;
  port: number;
  coordinatorPort: number;
  catalogPath?: string;
  floor: TrustLevel;
  dataDir: string;
  operatorKeys: string[];
  /** An in-process provider serving these `ALIAS=PATH` files and/or the models dir's files. */
  localModels: string[];
  modelsDir?: string;
  memoryGb?: number;
  threads?: number;
  keepaliveMs?: number;
  faults?: LocalFaults;
  logger: Logger;
}

export interface RunningGateway {
  url: string;
  coordinatorUrl: string;
  catalog: Catalog;
  /** The in-process provider, when there is one. */
  local?: { id: string; aliases: readonly string[] };
  close(): Promise<void>;
}

/** No providers: what the gateway has until agents connect. */
const emptyDirectory: Directory = {
  list: () => Promise.resolve([]),
  open: () => {
    throw new ApiError("provider_unavailable", "No provider is online.");
  },
  close: () => Promise.resolve(),
};

function listen(server: Server, port: number, host: string, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      if (err.code === "EADDRINUSE") reject(new Error(`${what} port ${port} on ${host} is already in use; pick another port`));
      else if (err.code === "EACCES") reject(new Error(`${what} port ${port} on ${host} needs privileges this user lacks`));
      else reject(err);
    };
    server.once("error", onError);
    server.listen(port, host, () => {
      server.off("error", onError);
      const address = server.address() as AddressInfo;
      const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
      resolve(`http://${shownHost}:${address.port}`);
    });
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

export async function serve(options: ServeOptions): Promise<RunningGateway> {
  const catalog = loadCatalog(options.catalogPath);
  mkdirSync(options.dataDir, { recursive: true });
  let directory = emptyDirectory;
  let local: RunningGateway["local"];
  if (options.localModels.length > 0 || options.modelsDir !== undefined) {
    const store = new ModelStore({
      catalog,
      modelsDir: options.modelsDir ?? join(options.dataDir, "models"),
      overrides: parseModelOverrides(catalog, options.localModels),
      verified: new VerifiedFiles(join(options.dataDir, "verified-models.json")),
    });
    const engine = new Engine({ store, threads: options.threads, log: (line) => options.logger.info(line) });
    const inProcess = new LocalDirectory({ engine, store, memoryGb: memoryGb(options.memoryGb), faults: options.faults });
    local = { id: inProcess.id, aliases: inProcess.aliases };
    directory = inProcess;
  }
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
  const coordinatorServer = createCoordinatorServer(catalog);
  const shutdown = async () => {
    await Promise.all([close(gatewayServer), close(coordinatorServer)]);
    await directory.close();
  };
  try {
    const url = await listen(gatewayServer, options.port, options.host, "gateway");
    const coordinatorUrl = await listen(coordinatorServer, options.coordinatorPort, options.host, "coordinator");
    return { url, coordinatorUrl, catalog, local, close: shutdown };
  } catch (err) {
    await shutdown();
    throw err;
  }
}
