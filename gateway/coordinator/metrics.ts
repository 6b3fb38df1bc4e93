// The coordinator's Prometheus metrics (`GET /metrics`), read from the registry at scrape time: providers
// by rung, each provider's busy state and queue depth, sessions started, frames relayed, open links.
import { Counter, Gauge, Registry as MetricsRegistry } from "prom-client";
import { TRUST_LEVELS } from "../../src/receipt/rungs.ts";
import { processMetrics } from "../http/ops.ts";
import type { Registry } from "./registry.ts";

export function coordinatorMetrics(registry: Registry, links: () => { agents: number; gateways: number }): MetricsRegistry {
  const metrics = new MetricsRegistry();
  const registers = [metrics];
  new Gauge({
    name: "svc_coordinator_providers",
    help: "Providers in the directory, by trust rung.",
    labelNames: ["rung"] as const,
    registers,
    collect() {
      const entries = registry.entries();
      for (const rung of TRUST_LEVELS) this.set({ rung }, entries.filter((e) => e.trust === rung).length);
    },
  });
  new Gauge({
    name: "svc_coordinator_provider_busy",
    help: "1 while the provider runs a sealed session.",
    labelNames: ["provider"] as const,
    registers,
    collect() {
      this.reset(); // a provider that left must not linger as a stale series
      for (const e of registry.entries()) this.set({ provider: e.id }, e.busy ? 1 : 0);
    },
  });
  new Gauge({
    name: "svc_coordinator_provider_queue_depth",
    help: "Sessions waiting in the provider's queue (SPEC §2.4 waiting).",
    labelNames: ["provider"] as const,
    registers,
    collect() {
      this.reset();
      for (const e of registry.entries()) this.set({ provider: e.id }, e.waiting);
    },
  });
  new Gauge({
    name: "svc_coordinator_links",
    help: "Open WebSocket links, by kind.",
    labelNames: ["kind"] as const,
    registers,
    collect() {
      const open = links();
      this.set({ kind: "agent" }, open.agents);
      this.set({ kind: "gateway" }, open.gateways);
    },
  });
  // counters mirror the registry's running totals, so the registry stays free of metrics code
  new Counter({
    name: "svc_coordinator_sessions_started_total",
    help: "Sealed sessions handed to a provider.",
    registers,
    collect() {
      this.reset();
      this.inc(registry.totals.sessionsStarted);
    },
  });
  new Counter({
    name: "svc_coordinator_frames_relayed_total",
    help: "Sealed frames relayed from providers to gateways.",
    registers,
    collect() {
      this.reset();
      this.inc(registry.totals.framesRelayed);
    },
  });
  new Counter({
    name: "svc_coordinator_stale_choices_total",
    help: "Sealed requests refused because the gateway's choice of provider no longer held (it left, changed, or another was less loaded); the gateway chose again.",
    registers,
    collect() {
      this.reset();
      this.inc(registry.totals.staleChoices);
    },
  });
  new Counter({
    name: "svc_coordinator_overloaded_total",
    help: "Requests answered 503 overloaded: a full provider or alias queue, or the longest wait in a queue passed.",
    registers,
    collect() {
      this.reset();
      this.inc(registry.totals.overloaded);
    },
  });
  processMetrics(metrics);
  return metrics;
}
