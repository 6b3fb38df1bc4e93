// One gateway's link at the coordinator: answers listings, reserves providers for sessions and relays their
// sealed requests; everything it carries for a session is ciphertext. The same endpoint serves a gateway over
// a WebSocket (JSON, checked with zod) and the gateway embedded in this process (objects, via its LocalFabric).
import type { Logger } from "pino";
import type { WebSocket } from "ws";
import { ApiError } from "../../src/errors.ts";
import { allowanceMs } from "../../src/heartbeat.ts";
import type { LivenessSweep } from "../../src/liveness-sweep.ts";
import { jsonSender } from "../../src/ws-send.ts";
import { FromGatewaySchema, parseMessage, toWireError, type FromGateway, type ToGateway } from "../../src/wire.ts";
import type { Attestations } from "./attestations.ts";
import type { GatewayPort, Registry } from "./registry.ts";

export interface GatewayEndpoint {
  receive(message: FromGateway): void;
  /** The gateway is gone: its queued and running sessions are cancelled. */
  close(): void;
}

/** The coordinator's side of a gateway link, whatever carries it. */
export function gatewayEndpoint(send: (message: ToGateway) => void, registry: Registry, attestations: Attestations, log: Logger): GatewayEndpoint {
  const port: GatewayPort = { send };

  function reserve(message: Extract<FromGateway, { t: "reserve" }>) {
    try {
      const provider = registry.reserve(port, message);
      log.debug({ session: message.id, provider: provider.id, alias: message.alias, waiting: provider.waiting }, "session queued");
      port.send({ t: "reserved", id: message.id, provider });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      port.send({ t: "rejected", id: message.id, error: toWireError(err) });
    }
  }

  return {
    receive: (message) => {
      if (message.t === "list") port.send({ t: "listed", rid: message.rid, providers: registry.entries() });
      else if (message.t === "attestation") port.send({ t: "attestation", rid: message.rid, record: attestations.get(message.id) ?? null });
      else if (message.t === "reserve") reserve(message);
      else if (message.t === "request") registry.request(port, message.id, { enc: message.enc, ct: message.ct, ...(message.whole ? { whole: true } : {}) });
      else registry.cancel(port, message.id);
    },
    close: () => registry.dropGateway(port),
  };
}

/** `heartbeatMs` is the gateway's beat interval: it beats at the busy rate always (there are few gateways). */
export function acceptGateway(ws: WebSocket, registry: Registry, attestations: Attestations, log: Logger, sweep: LivenessSweep, heartbeatMs: number): void {
  const endpoint = gatewayEndpoint(jsonSender<ToGateway>(ws), registry, attestations, log);
  ws.on("message", (data) => {
    const message = parseMessage(FromGatewaySchema, data);
    if (!message) {
      log.warn("gateway sent a frame that is not a valid gateway message; closing its link");
      ws.close(1008, "invalid message");
      return;
    }
    endpoint.receive(message);
  });
  ws.on("error", (err) => log.warn({ why: err.message }, "gateway link error"));
  const liveness = sweep.watch(ws, { allowanceMs: allowanceMs(heartbeatMs), onDead: () => ws.terminate() });
  ws.on("close", () => {
    liveness.stop();
    endpoint.close();
    log.info("gateway disconnected");
  });
  log.info("gateway connected");
}
