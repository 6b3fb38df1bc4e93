// The coordinator's endpoints: the public catalog over HTTP (SPEC §4.4, DESIGN §3), and two WebSocket
// paths on the same port, one for agents and one for gateways.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { Logger } from "pino";
import { WebSocketServer } from "ws";
import type { TrustAnchors } from "../../src/trust/attestation.ts";
import { catalogBody, type Catalog } from "../../src/catalog.ts";
import { GATEWAY_MAX_FRAME_BYTES, GATEWAY_PATH, type ToGateway } from "../../src/wire/gateway.ts";
import { AGENT_MAX_FRAME_BYTES, AGENT_PATH } from "../../src/wire/agent.ts";
import { DEFAULT_HEARTBEAT_MS, sweepTickMs } from "../../src/link/heartbeat.ts";
import { LivenessSweep } from "./liveness-sweep.ts";
import { DEFAULT_HTTP_TIMEOUTS, serverOptions } from "../http/timeouts.ts";
import { opsRoutes, type Ops, type OpsHandler } from "../http/ops.ts";
import { Router } from "../http/router.ts";
import { asApiError, sendError, sendJson } from "../http/respond.ts";
import { coordinatorMetrics } from "./metrics.ts";
import { acceptAgent } from "./agent-link.ts";
import { gatewayRefusal, type AdmissionPolicy } from "./admission.ts";
import { acceptGateway, gatewayEndpoint, type GatewayEndpoint } from "./gateway-link.ts";
import { Attestations } from "./attestations.ts";
import { EnrollmentWatch } from "./enrollment-watch.ts";
import { ConnectionGate, DEFAULT_GATE_LIMITS, type GateLimits } from "./connection-gate.ts";
import { ConnectionLog } from "./connection-log.ts";
import { Registry, type QueueLimits } from "./registry.ts";
import { serveGatewaysOnNats } from "./nats-gateways.ts";
import type { ClaimEpochs } from "./claim-epochs.ts";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Signer } from "../../src/crypto/signing.ts";
import { bearerKey } from "../http/bearer.ts";

export const DEFAULT_RECHALLENGE_MS = 5 * 60_000;

export interface CoordinatorOptions {
  catalog: Catalog;
  anchors: TrustAnchors;
  admission: AdmissionPolicy;
  limits?: Partial<QueueLimits>;
  logger: Logger;
  heartbeatMs?: number;
  rechallengeMs?: number;
  /** Caps and the handshake deadline for connections not yet proven (default DEFAULT_GATE_LIMITS). */
  gate?: GateLimits;
  /** `--nats`: gateways on the NATS fabric reach this coordinator too (gateway/coordinator/nats-gateways.ts). */
  nats?: NatsSide;
}

/** A coordinator's place on NATS: the connection, the shared epochs its claims are ordered by, the key it signs with. */
export interface NatsSide {
  connection: NatsConnection;
  epochs: ClaimEpochs;
  /** Its directory key (directory-key.ts): every message it publishes to gateways is signed with it. */
  key: Signer;
}

export interface CoordinatorServer {
  server: Server;
  /** Ends every agent and gateway link (an upgraded socket would keep `server.close` waiting forever). */
  dropLinks(): void;
  /** A link for the gateway embedded in this process: no socket, no JSON (gateway/fabric/local.ts). */
  openLocalLink(send: (message: ToGateway) => void): GatewayEndpoint;
}

export function createCoordinatorServer(options: CoordinatorOptions): CoordinatorServer {
  const { catalog, logger } = options;
  const heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  const body = catalogBody(catalog);
  const registry = new Registry(new Set(catalog.models.map((m) => m.alias)), options.limits);
  const attestations = new Attestations();
  const log = logger.child({ role: "coordinator" });
  // no automatic pongs: the sweep answers only the beats that ask, since most need no answer (src/link/heartbeat.ts)
  const agents = new WebSocketServer({ noServer: true, maxPayload: AGENT_MAX_FRAME_BYTES, autoPong: false });
  const gateways = new WebSocketServer({ noServer: true, maxPayload: GATEWAY_MAX_FRAME_BYTES, autoPong: false });
  const localLinks = new Set<GatewayEndpoint>();
  // one timer for every link's liveness: the coordinator's idle cost must not grow with a timer per link
  const sweep = new LivenessSweep(sweepTickMs(heartbeatMs));
  const connections: ConnectionLog = new ConnectionLog(log, () => gate.size);
  const gate = new ConnectionGate(options.gate ?? DEFAULT_GATE_LIMITS, connections);
  const onNats = options.nats && serveGatewaysOnNats(options.nats.connection, { registry, attestations, log, epochs: options.nats.epochs, key: options.nats.key });
  const gatewayCount = () => gateways.clients.size + localLinks.size + (onNats?.gateways ?? 0);
  const enrollments = new EnrollmentWatch(() => options.admission.liveEnrollments(), (err) => log.error({ err }, "could not read the live enrollments"));

  const ops: Ops = {
    registry: coordinatorMetrics(registry, () => ({ agents: agents.clients.size, gateways: gatewayCount() })),
    health: () => ({ ok: true, body: { status: "ok", providers: registry.entries().length, gateways: gatewayCount() } }),
  };

  const routes = new Router<OpsHandler>(
    [
      ...opsRoutes(ops),
      // public: the catalog needs no key (SPEC §5)
      { name: "/v1/catalog", path: "/v1/catalog", methods: { GET: async (res) => sendJson(res, 200, body) } },
    ],
    (method, path) => `No route ${method} ${path} on the coordinator.`,
  );
  const server = createServer(serverOptions(DEFAULT_HTTP_TIMEOUTS), (req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const answer = async () => routes.resolve(req.method ?? "GET", path, res).handler(res);
    answer().catch((err: unknown) => sendError(req, res, asApiError(err)));
  });

  server.on("connection", (socket: Socket) => gate.admit(socket));
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (req.url ?? "/").split("?")[0];
    const remote = `${req.socket.remoteAddress ?? "?"}:${req.socket.remotePort ?? "?"}`;
    if (path === AGENT_PATH) {
      const token = bearerKey(req.headers.authorization);
      const { anchors, admission } = options;
      agents.handleUpgrade(req, socket, head, (ws) =>
        acceptAgent(ws, remote, token, {
          registry, attestations, anchors, admission, log, heartbeatMs, sweep, enrollments, connections,
          rechallengeMs: options.rechallengeMs ?? DEFAULT_RECHALLENGE_MS,
          proven: () => gate.proven(req.socket),
        }),
      );
    } else if (path === GATEWAY_PATH) {
      const refusal = gatewayRefusal(options.admission, req.headers.authorization);
      if (refusal !== undefined) {
        connections.detail({ gateway: remote, reason: refusal }, "gateway refused");
        socket.end(`HTTP/1.1 401 Unauthorized\r\nconnection: close\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(refusal)}\r\n\r\n${refusal}`);
        return;
      }
      gate.proven(req.socket);
      gateways.handleUpgrade(req, socket, head, (ws) => acceptGateway(ws, registry, attestations, log.child({ gateway: remote }), sweep, heartbeatMs));
    } else {
      socket.end("HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
    }
  });
  const dropLinks = () => {
    onNats?.close();
    enrollments.stop();
    gate.stop();
    connections.stop();
    for (const ws of [...agents.clients, ...gateways.clients]) ws.terminate();
    for (const endpoint of [...localLinks]) endpoint.close();
  };
  const openLocalLink = (send: (message: ToGateway) => void): GatewayEndpoint => {
    const endpoint = gatewayEndpoint(send, registry, attestations, log.child({ gateway: "embedded" }));
    const link: GatewayEndpoint = {
      receive: (message) => endpoint.receive(message),
      close: () => {
        if (localLinks.delete(link)) endpoint.close();
      },
    };
    localLinks.add(link);
    return link;
  };
  return { server, dropLinks, openLocalLink };
}
