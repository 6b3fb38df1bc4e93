// The operator endpoints that gateway and coordinator both serve with no key: `GET /healthz` for load
// balancers and orchestrators, `GET /metrics` (Prometheus text) for monitoring.
import type { ServerResponse } from "node:http";
import { collectDefaultMetrics, type Registry } from "prom-client";
import { readable, type Route } from "./router.ts";
import { sendBody, sendJson } from "./respond.ts";

export const OPS_PATHS: ReadonlySet<string> = new Set(["/healthz", "/metrics"]);

export interface Ops {
  registry: Registry;
  /** 200 when `ok`, else 503, with `body` saying why either way. */
  health(): { ok: boolean; body: Record<string, unknown> };
}

export type OpsHandler = (res: ServerResponse) => Promise<void>;

/** The routes of OPS_PATHS, for a server's route table. */
export function opsRoutes(ops: Ops): Route<OpsHandler>[] {
  return [
    {
      name: "/healthz",
      path: "/healthz",
      methods: readable(async (res) => {
        const { ok, body } = ops.health();
        sendJson(res, ok ? 200 : 503, body, { "cache-control": "no-store" });
      }),
    },
    { name: "/metrics", path: "/metrics", methods: readable(async (res) => sendBody(res, 200, ops.registry.contentType, await ops.registry.metrics())) },
  ];
}

/**
 * The process's own series (CPU, memory, event-loop delay) on `register`. The event-loop delay histogram samples on
 * a timer: prom-client's 10 ms default woke an idle process 100 times a second, 0.6 % of a core on a small VM;
 * 100 ms still catches any stall worth a metric. One setting for gateway and coordinator, which may share a process.
 */
export function processMetrics(register: Registry): void {
  collectDefaultMetrics({ register, eventLoopMonitoringPrecision: 100 });
}
