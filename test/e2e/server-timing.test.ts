// Server-Timing (W3C) on every answer: auth, route, queue, seal, provider, verify and total, in ms. A non-stream
// answer carries them all as a header; a stream's head says what is known before a provider is chosen and its
// stop chunk carries the rest as `x_svc_timing`. The header parser here is the spec's grammar, not ours.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServerTiming } from "../../gateway/http/server-timing.ts";
import { post, startGateway, type GatewayProcess } from "../fixtures/gateway.ts";
import { readSse } from "../../harness/sse.ts";

/** `name;dur=1.5, other;dur=2` → { name: 1.5, other: 2 }, failing on anything else. */
function parseServerTiming(header: string | null): Record<string, number> {
  expect(header).not.toBeNull();
  const out: Record<string, number> = {};
  for (const metric of header!.split(",")) {
    const match = /^\s*([A-Za-z][A-Za-z0-9_-]*);dur=(\d+(?:\.\d+)?)\s*$/.exec(metric);
    expect(match, metric).not.toBeNull();
    out[match![1]!] = Number(match![2]);
  }
  return out;
}

describe("ServerTiming", () => {
  it("adds up repeated steps, orders the names, and ends with total since the request began", () => {
    const timing = new ServerTiming(1000);
    timing.add("route", 0.5);
    timing.add("auth", 0.25);
    timing.add("route", 0.25);
    expect(timing.header(1004.5)).toBe("auth;dur=0.25, route;dur=0.75, total;dur=4.5");
    expect(timing.object(1004.5)).toEqual({ auth: 0.25, route: 0.75, total: 4.5 });
  });

  it("times a step even when it throws, and never records a negative duration", () => {
    const timing = new ServerTiming(0);
    expect(() => timing.time("verify", () => { throw new Error("bad"); })).toThrow("bad");
    timing.add("queue", -1);
    expect(Object.keys(timing.object(1))).toEqual(["queue", "verify", "total"]);
    expect(timing.object(1).queue).toBe(0);
  });
});

describe("Server-Timing on the gateway's answers", () => {
  let gw: GatewayProcess;
  beforeAll(async () => {
    gw = await startGateway({ aliases: [{ alias: "qwen3-4b", seed: 1 }] });
  });
  afterAll(() => gw.stop());
  const body = { model: "qwen3-4b", messages: [{ role: "user", content: "Hi" }], max_tokens: 8, temperature: 0 };

  it("a completion carries every step, and total is at least the provider's part", async () => {
    const res = await post(gw, "/v1/chat/completions", body);
    expect(res.status).toBe(200);
    const timing = parseServerTiming(res.headers.get("server-timing"));
    expect(Object.keys(timing)).toEqual(["auth", "route", "queue", "seal", "provider", "verify", "total"]);
    expect(timing.total).toBeGreaterThanOrEqual(timing.provider!);
    expect(timing.provider).toBeGreaterThan(0);
  });

  it("a stream: the head has auth and total so far; the stop chunk's x_svc_timing has the rest", async () => {
    const res = await post(gw, "/v1/chat/completions", { ...body, stream: true });
    expect(Object.keys(parseServerTiming(res.headers.get("server-timing")))).toEqual(["auth", "total"]);
    const stream = await readSse(res);
    const stop = JSON.parse(stream.data.at(-2)!) as { x_svc_timing: Record<string, number> };
    expect(Object.keys(stop.x_svc_timing)).toEqual(["auth", "route", "queue", "seal", "provider", "verify", "total"]);
    for (const ms of Object.values(stop.x_svc_timing)) expect(ms).toBeGreaterThanOrEqual(0);
  });

  it("an error carries it too", async () => {
    const res = await post(gw, "/v1/chat/completions", { ...body, temperature: 9 });
    expect(res.status).toBe(400);
    expect(Object.keys(parseServerTiming(res.headers.get("server-timing")))).toEqual(["auth", "total"]);
  });
});
