// The operator endpoints that gateway and coordinator both serve with no key: `GET /healthz` for load
// balancers and orchestrators, `GET /metrics` (Prometheus text) for monitoring.
import type { ServerResponse } from "node:http";
import { collectDefaultMetrics, type Registry } from "prom-client";
import { ApiError } from "../../src/errors.ts";
import { sendBody, sendJson } from "./respond.ts";

export const OPS_PATHS: ReadonlySet<string> = new Set(["/healthz", "/metrics"]);

export interface Ops {
  registry: Registry;
  /** 200 when `ok`, else 503, with `body` saying why either way. */
  health(): { ok: boolean; body: Record<string, unknown> };
}

/** Answers one of OPS_PATHS; other methods are 405 like any route. */
export async function answerOps(ops: Ops, method: string, path: string, res: ServerResponse): Promise<void> {
  if (method !== "GET" && method !== "HEAD") {
    throw new ApiError("method_not_allowed", `${method} is not allowed on ${path}; use GET.`);
  }
  if (path === "/metrics") {
    sendBody(res, 200, ops.registry.contentType, await ops.registry.metrics());
    return;
  }
  const { ok, body } = ops.health();
  sendJson(res, ok ? 200 : 503, body, { "cache-control": "no-store" });
}

/**
 * The process's own series (CPU, memory, event-loop delay) on `register`. The event-loop delay histogram samples on
 * a timer: prom-client's 10 ms default woke an idle process 100 times a second, 0.6 % of a core on a small VM;
 * 100 ms still catches any stall worth a metric. One setting for gateway and coordinator, which may share a process.
 */
export function processMetrics(register: Registry): void {
  collectDefaultMetrics({ register, eventLoopMonitoringPrecision: 100 });
}
