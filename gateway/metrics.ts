// The gateway's Prometheus metrics (`GET /metrics`, prom-client): requests by route and status, latency and
// time-to-first-token histograms, tokens in and out, receipts that failed verification, and 429s by the limit
// that gave them. Each gateway has its own registry, so an embedded coordinator or a second gateway in one
// process never collides.
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { processMetrics } from "./http/ops.ts";
import type { RequestLog } from "./request-log.ts";
import { FAULT_KINDS, type FaultKind } from "./directory/provider-faults.ts";

/** From half a millisecond (the gateway's own cost) to a minute (a long generation). */
const SECONDS_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

const RATE_LIMITS = ["concurrency", "rpm", "tpm", "user_concurrency", "user_rpm", "user_tpm", "auth"] as const;

export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: "svc_gateway_requests_total",
    help: "Requests answered, by route pattern, method, HTTP status and error code (empty on success).",
    labelNames: ["route", "method", "status", "code"] as const,
    registers: [this.registry],
  });
  private readonly latency = new Histogram({
    name: "svc_gateway_request_duration_seconds",
    help: "Time from the request's arrival to the end of its answer, by route pattern.",
    labelNames: ["route"] as const,
    buckets: SECONDS_BUCKETS,
    registers: [this.registry],
  });
  private readonly ttft = new Histogram({
    name: "svc_gateway_time_to_first_token_seconds",
    help: "Time from a chat completion's arrival to its first content delta from the provider.",
    labelNames: ["stream"] as const,
    buckets: SECONDS_BUCKETS,
    registers: [this.registry],
  });
  private readonly tokens = new Counter({
    name: "svc_gateway_tokens_total",
    help: "Tokens in verified receipts: direction=in for prompt tokens, out for completion tokens.",
    labelNames: ["direction"] as const,
    registers: [this.registry],
  });
  private readonly receiptFailures = new Counter({
    name: "svc_gateway_receipt_verification_failures_total",
    help: "Provider receipts that failed verification (answered 502 receipt_invalid, never passed on).",
    registers: [this.registry],
  });
  private readonly rateLimitedTotal = new Counter({
    name: "svc_gateway_rate_limited_total",
    help: "Requests answered 429 rate_limited, by limit: a key's concurrency, rpm or tpm, a user's (over all their keys) user_concurrency, user_rpm or user_tpm, or auth (an address failing to authenticate).",
    labelNames: ["limit"] as const,
    registers: [this.registry],
  });
  private readonly providerFaults = new Counter({
    name: "svc_gateway_provider_faults_total",
    help: "Provider faults this gateway charged (DESIGN §8), by kind: answer_bounds, deadline, tool_call, error, broken.",
    labelNames: ["kind"] as const,
    registers: [this.registry],
  });
  private readonly providerRests = new Counter({
    name: "svc_gateway_provider_rests_total",
    help: "Times a provider was sent to rest out of rotation after repeated faults.",
    registers: [this.registry],
  });
  readonly inFlight = new Gauge({
    name: "svc_gateway_requests_in_flight",
    help: "Requests being answered now.",
    registers: [this.registry],
  });

  constructor(coordinatorConnected: () => boolean) {
    new Gauge({
      name: "svc_gateway_coordinator_connected",
      help: "1 while the gateway's link to its coordinator is up.",
      registers: [this.registry],
      collect() {
        this.set(coordinatorConnected() ? 1 : 0);
      },
    });
    processMetrics(this.registry);
    // every series from the start, so a dashboard's rate() sees the first 429 rather than a new series
    for (const limit of RATE_LIMITS) this.rateLimitedTotal.inc({ limit }, 0);
    for (const kind of FAULT_KINDS) this.providerFaults.inc({ kind }, 0);
  }

  providerFault(kind: FaultKind, rested: boolean): void {
    this.providerFaults.inc({ kind });
    if (rested) this.providerRests.inc();
  }

  rateLimited(limit: (typeof RATE_LIMITS)[number]): void {
    this.rateLimitedTotal.inc({ limit });
  }

  /** One finished request, from the same fields as its log line. */
  observe(route: string, method: string, log: RequestLog, seconds: number): void {
    this.requests.inc({ route, method, status: String(log.status ?? 0), code: log.code ?? "" });
    this.latency.observe({ route }, seconds);
    if (log.ttft_ms !== undefined) this.ttft.observe({ stream: String(log.stream === true) }, log.ttft_ms / 1000);
    if (log.prompt_tokens !== undefined) this.tokens.inc({ direction: "in" }, log.prompt_tokens);
    if (log.completion_tokens !== undefined) this.tokens.inc({ direction: "out" }, log.completion_tokens);
    if (log.code === "receipt_invalid") this.receiptFailures.inc();
  }
}
