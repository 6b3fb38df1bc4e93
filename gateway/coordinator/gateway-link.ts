// One gateway's link at the coordinator: feeds its copy of the directory, places its sealed requests on the
// providers it chose (or says the choice is stale) and relays their sealed frames; everything it carries for a
// session is ciphertext. The same endpoint serves a gateway over a WebSocket (JSON, checked by hand: src/wire/gateway.ts) and the
// gateway embedded in this process (objects, via its LocalFabric).
import type { Logger } from "pino";
import type { WebSocket } from "ws";
import { ApiError } from "../../src/errors.ts";
import { allowanceMs } from "../../src/link/heartbeat.ts";
import type { LivenessSweep } from "./liveness-sweep.ts";
import { jsonSender } from "../../src/link/ws-send.ts";
import { readFromGateway, toWireError, type FromGateway, type ToGateway } from "../../src/wire/gateway.ts";
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
  const { feed } = registry;

  function place(message: Extract<FromGateway, { t: "place" }>) {
    let refusal: ToGateway;
    try {
      if (registry.place(port, message) === "placed") {
        log.debug({ session: message.id, provider: message.provider, alias: message.alias }, "session placed");
        feed.settled(port, message.id);
        return;
      }
      refusal = { t: "stale", id: message.id };
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      refusal = { t: "rejected", id: message.id, error: toWireError(err) };
    }
    // the copy counted this placement on the chosen provider: its true entry goes first, so the gateway
    // chooses again from a copy that already holds why this one was refused
    feed.touch(message.provider);
    feed.settled(port, message.id);
    feed.flush();
    port.send(refusal);
  }

  feed.subscribe(port);
  return {
    receive: (message) => {
      if (message.t === "attestation") port.send({ t: "attestation", rid: message.rid, evidence: attestations.get(message.id) ?? null });
      else if (message.t === "place") place(message);
      else registry.cancel(port, message.id);
    },
    close: () => {
      feed.unsubscribe(port);
      registry.dropGateway(port);
    },
  };
}

/** `heartbeatMs` is the gateway's beat interval: it beats at the busy rate always (there are few gateways). */
export function acceptGateway(ws: WebSocket, registry: Registry, attestations: Attestations, log: Logger, sweep: LivenessSweep, heartbeatMs: number): void {
  const endpoint = gatewayEndpoint(jsonSender<ToGateway>(ws), registry, attestations, log);
  ws.on("message", (data) => {
    const message = readFromGateway(data);
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
