// Observability: GET /healthz and GET /metrics (Prometheus text) on gateway and coordinator, no key needed;
// the counters move with real requests through a real gateway, coordinator and synthetic-engine agents.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { get, post, startAgent, startGateway, type AgentProcess, type GatewayProcess } from "../fixtures/gateway.ts";

const SYNTHETIC = ["--engine", "synthetic", "--synthetic-tokens", "5"];
let gw: GatewayProcess;
let liar: AgentProcess;

beforeAll(async () => {
  gw = await startGateway({ agentArgs: SYNTHETIC });
  liar = await startAgent(gw.coordinatorUrl, gw.tiny, { args: [...SYNTHETIC, "--test-fault", "receipt=tamper"] });
  await gw.waitForLog((l) => l.msg === "agent advertising" && l.provider === liar.providerId);
}, 60_000);
afterAll(async () => {
  await liar.stop();
  await gw.stop();
});

const scrape = async (url: string) => {
  const res = await fetch(`${url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
};
/** The value of one sample line, e.g. `name{a="b"} 3`; undefined when absent. */
const sample = (text: string, series: string): number | undefined => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};
const chat = (extra: Record<string, unknown> = {}) => post(gw, "/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], max_tokens: 5, ...extra });

describe("Observability: GET /healthz", () => {
  it("the gateway answers 200 with no key while its coordinator link is up", async () => {
    const res = await fetch(`${gw.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok", coordinator: "connected" });
  });

  it("the coordinator answers 200 with no key and counts its providers and gateways", async () => {
    const res = await fetch(`${gw.coordinatorUrl}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok", providers: 2, gateways: 1 });
  });

  it("other methods get the SPEC envelope: 405 method_not_allowed", async () => {
    for (const url of [gw.url, gw.coordinatorUrl]) {
      const res = await fetch(`${url}/healthz`, { method: "POST" });
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("GET, HEAD");
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("method_not_allowed");
    }
  });
});

describe("Observability: GET /metrics on the gateway", () => {
  it("counts requests by route and status, tokens in and out from verified receipts, and time to first token", async () => {
    const route = 'route="/v1/chat/completions",method="POST",status="200",code=""';
    const before = await scrape(gw.url);
    const ok = (await (await chat({ provider: gw.providerId })).json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
    const streamed = await chat({ provider: gw.providerId, stream: true });
    expect(await streamed.text()).toContain("data: [DONE]");
    const after = await scrape(gw.url);
    const delta = (series: string) => (sample(after, series) ?? 0) - (sample(before, series) ?? 0);
    expect(delta(`svc_gateway_requests_total{${route}}`)).toBe(2);
    expect(delta('svc_gateway_tokens_total{direction="out"}')).toBe(2 * ok.usage.completion_tokens);
    expect(delta('svc_gateway_tokens_total{direction="in"}')).toBe(2 * ok.usage.prompt_tokens);
    expect(delta('svc_gateway_time_to_first_token_seconds_count{stream="true"}')).toBe(1);
    expect(delta('svc_gateway_time_to_first_token_seconds_count{stream="false"}')).toBe(1);
    expect(delta('svc_gateway_request_duration_seconds_count{route="/v1/chat/completions"}')).toBe(2);
    expect(sample(after, "svc_gateway_coordinator_connected")).toBe(1);
    expect(after).toContain("process_resident_memory_bytes");
  });

  it("counts 401s by code, and receipts that fail verification", async () => {
    const before = await scrape(gw.url);
    await fetch(`${gw.url}/v1/models`, { headers: { authorization: "Bearer wrong" } });
    const refused = await chat({ provider: liar.providerId });
    expect(refused.status).toBe(502);
    const after = await scrape(gw.url);
    const delta = (series: string) => (sample(after, series) ?? 0) - (sample(before, series) ?? 0);
    expect(delta('svc_gateway_requests_total{route="/v1/models",method="GET",status="401",code="invalid_api_key"}')).toBe(1);
    expect(delta("svc_gateway_receipt_verification_failures_total")).toBe(1);
  });
});

describe("Observability: GET /metrics on the coordinator", () => {
  it("shows providers by rung, each provider's busy state and queue depth, and sessions started", async () => {
    const before = await scrape(gw.coordinatorUrl);
    expect(sample(before, 'svc_coordinator_providers{rung="process"}')).toBe(2);
    expect(sample(before, 'svc_coordinator_providers{rung="hardware"}')).toBe(0);
    expect(sample(before, `svc_coordinator_provider_busy{provider="${gw.providerId}"}`)).toBe(0);
    expect(sample(before, `svc_coordinator_provider_queue_depth{provider="${gw.providerId}"}`)).toBe(0);
    expect(sample(before, 'svc_coordinator_links{kind="agent"}')).toBe(2);
    await chat({ provider: gw.providerId });
    const after = await scrape(gw.coordinatorUrl);
    expect(sample(after, "svc_coordinator_sessions_started_total")! - sample(before, "svc_coordinator_sessions_started_total")!).toBe(1);
    // a non-stream answer: its tokens and the receipt in one sealed frame
    expect(sample(after, "svc_coordinator_frames_relayed_total")! - sample(before, "svc_coordinator_frames_relayed_total")!).toBe(1);
  });
});

describe("Observability: the agent's log", () => {
  it("logs tokens/s for each session", async () => {
    await chat({ provider: gw.providerId });
    await gw.agents[0]!.waitFor(/session \S+ end: (stop|length), 5 tokens in [\d.]+ s \([\d.]+ tok\/s\)/);
  });
});

describe("Observability: GET /v1/providers still needs a key", () => {
  it("unlike /healthz and /metrics", async () => {
    expect((await get({ url: gw.url, key: "nope" }, "/v1/providers")).status).toBe(401);
  });
});
