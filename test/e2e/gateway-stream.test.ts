// SPEC §3 on the wire, black-box against real `svc-gateway serve` processes: byte-exact SSE framing, keepalive
// while a request waits, failures before and after the first token, and a caller hanging up.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listProviders, post, startGateway, type GatewayProcess } from "../fixtures/gateway.ts";
import { readSse } from "../../harness/sse.ts";

const ask = (extra: Record<string, unknown> = {}) => ({
  model: "qwen3-4b",
  messages: [{ role: "user", content: "Say something." }],
  max_tokens: 8,
  stream: true,
  ...extra,
});

const chunkOf = (data: string) => JSON.parse(data) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- chunk fields are checked one by one

/** The listing record of the gateway's one provider. */
const provider = async (gw: GatewayProcess) => (await listProviders(gw))[0]!;
/** Polls it every 20 ms: `timeout` is generous where the test only waits, and the bound itself where it claims one. */
const pollProvider = (gw: GatewayProcess, timeout: number) => expect.poll(() => provider(gw), { timeout, interval: 20 });

describe("§3 Ordering of a streamed response", () => {
  let gw: GatewayProcess;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(() => gw.stop());

  it("is exactly: role chunk, content deltas, stop chunk, data: [DONE], with one id and created", async () => {
    const res = await post(gw, "/v1/chat/completions", ask());
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
    const { raw, data, comments } = await readSse(res);
    expect(comments).toEqual([]);
    // every event is one `data: ` line and a blank line, nothing else on the wire
    expect(raw).toMatch(/^(data: [^\n]+\n\n)+$/);
    expect(raw.endsWith("\n\ndata: [DONE]\n\n")).toBe(true);
    const chunks = data.slice(0, -1).map(chunkOf);
    expect(data.at(-1)).toBe("[DONE]");
    const [role, ...rest] = chunks;
    const stop = rest.pop()!;
    expect(role).toEqual({
      id: expect.stringMatching(/^chatcmpl-/),
      object: "chat.completion.chunk",
      created: expect.any(Number),
      model: "qwen3-4b",
      choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }],
    });
    for (const c of rest) {
      expect(Object.keys(c)).toEqual(["id", "object", "created", "model", "choices"]);
      expect(c.choices).toEqual([{ index: 0, delta: { content: expect.any(String) }, finish_reason: null }]);
    }
    const text = rest.map((c) => c.choices[0].delta.content as string).join("");
    expect(text).toHaveLength(8);
    expect(stop.choices).toEqual([{ index: 0, delta: {}, finish_reason: "length" }]);
    expect(stop.usage).toEqual({ prompt_tokens: expect.any(Number), completion_tokens: 8, total_tokens: stop.usage.prompt_tokens + 8, prompt_tokens_details: { cached_tokens: 0 } });
    expect(stop.svc_receipt).toMatchObject({ trust_level: "process", model_id: "qwen3-4b", provider_id: gw.providerId });
    expect([stop.x_svc_trust, stop.x_svc_model, stop.x_svc_provider]).toEqual(["process", "qwen3-4b", gw.providerId]);
    for (const c of chunks) expect([c.id, c.created]).toEqual([role!.id, role!.created]);
  });

  it.each([
    ["absent", undefined],
    ["include_usage false", { include_usage: false }],
    ["include_usage true with extra keys", { include_usage: true, extra: 1 }],
  ])("the stop chunk carries usage whatever stream_options says (%s)", async (_, stream_options) => {
    const { data } = await readSse(await post(gw, "/v1/chat/completions", ask({ stream_options })));
    const stop = chunkOf(data.at(-2)!);
    expect(stop.usage.completion_tokens).toBe(8);
  });

  it("a request fault is still a plain 4xx JSON answer, not a stream", async () => {
    const res = await post(gw, "/v1/chat/completions", ask({ model: "nope" }));
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toBe("application/json");
  });

  it("a pin to a machine that is not online: the error object in a data line, no [DONE]", async () => {
    const { raw, data } = await readSse(await post(gw, "/v1/chat/completions", ask({ provider: "0".repeat(64) })));
    expect(data.includes("[DONE]")).toBe(false);
    expect(chunkOf(data.at(-1)!)).toEqual({
      error: { message: expect.any(String), type: "api_error", code: "provider_unavailable", param: null, svc_action: "wait" },
    });
    expect(raw).not.toContain("svc_receipt");
  });
});

describe("§3 Keepalive and hang-up, on a slow provider", () => {
  let gw: GatewayProcess;
  beforeAll(async () => {
    gw = await startGateway({ args: ["--keepalive-ms", "100"], agentArgs: ["--test-fault", "token-delay-ms=25"] });
  });
  afterAll(async () => {
    // nothing went wrong on the gateway's side: no write to a dead socket, no unexpected failure
    expect(gw.logs().filter((l) => Number(l.level) >= 50)).toEqual([]);
    expect(gw.stderr()).toBe("");
    await gw.stop();
  });

  it("the head is flushed before a provider is free, and `: keepalive` lines come while the request waits", async () => {
    const first = post(gw, "/v1/chat/completions", ask({ max_tokens: 30 })); // ~0.75 s of work
    await pollProvider(gw, 10_000).toMatchObject({ busy: true });
    const second = await post(gw, "/v1/chat/completions", ask({ max_tokens: 4 }));
    // fetch resolves on the head: the second request is still queued behind the first
    expect(second.headers.get("content-type")).toBe("text/event-stream");
    expect(await listProviders(gw)).toMatchObject([{ busy: true, waiting: 1 }]);
    const [a, b] = await Promise.all([first.then((res) => readSse(res)), readSse(second)]);
    expect(a.data.at(-1)).toBe("[DONE]");
    expect(b.comments.filter((c) => c === "keepalive").length).toBeGreaterThanOrEqual(2);
    expect(b.comments.every((c) => c === "keepalive")).toBe(true);
    // byte-exact: a keepalive is a comment line and a blank line between events
    expect(b.raw).toMatch(/^data: [^\n]+\n\n(: keepalive\n\n)+data: /);
    expect(b.data.at(-1)).toBe("[DONE]");
  });

  it("a stream caller hanging up aborts the session within a second and frees the provider", async () => {
    const controller = new AbortController();
    const res = await post(gw, "/v1/chat/completions", ask({ max_tokens: 400 }), { signal: controller.signal });
    const id = res.headers.get("x-request-id");
    const reader = res.body!.getReader();
    await reader.read(); // the role chunk, then at least one token
    await reader.read();
    const aborted = Date.now();
    controller.abort();
    await pollProvider(gw, 1000).toMatchObject({ busy: false });
    expect(Date.now() - aborted).toBeLessThan(1000);
    expect(await gw.waitForLog((l) => l.id === id)).toMatchObject({ code: "aborted", provider: gw.providerId });
    const next = await post(gw, "/v1/chat/completions", ask({ stream: false, max_tokens: 2 }));
    expect(next.status).toBe(200);
  });

  it("a non-stream caller hanging up aborts the session too", async () => {
    const controller = new AbortController();
    const pending = post(gw, "/v1/chat/completions", ask({ stream: false, max_tokens: 400 }), { signal: controller.signal });
    await pollProvider(gw, 10_000).toMatchObject({ busy: true });
    controller.abort();
    await expect(pending).rejects.toThrow();
    await pollProvider(gw, 1000).toMatchObject({ busy: false });
    // a non-stream hang-up is logged with no status: no head was ever sent
    expect(await gw.waitForLog((l) => l.code === "aborted" && l.status === undefined)).toMatchObject({ provider: gw.providerId });
  });

  it("a caller hanging up while queued leaves the queue", async () => {
    const first = post(gw, "/v1/chat/completions", ask({ max_tokens: 30 }));
    await pollProvider(gw, 10_000).toMatchObject({ busy: true });
    const controller = new AbortController();
    await post(gw, "/v1/chat/completions", ask(), { signal: controller.signal });
    await pollProvider(gw, 10_000).toMatchObject({ waiting: 1 });
    controller.abort();
    await pollProvider(gw, 1000).toMatchObject({ waiting: 0 });
    expect((await readSse(await first)).data.at(-1)).toBe("[DONE]");
  });
});

describe("§3 A stream that fails", () => {
  it("after the first token: the error object in a data line, no [DONE], no receipt", async () => {
    const gw = await startGateway({ agentArgs: ["--test-fault", "fail-after=3"] });
    try {
      const { raw, data } = await readSse(await post(gw, "/v1/chat/completions", ask()));
      expect(data).not.toContain("[DONE]");
      expect(raw).not.toContain("svc_receipt");
      expect(raw.endsWith("\n\n")).toBe(true);
      const contents = data.slice(1, -1).map(chunkOf);
      expect(contents.map((c) => c.choices[0].delta.content).join("")).toHaveLength(3);
      expect(chunkOf(data.at(-1)!)).toEqual({
        error: { message: expect.any(String), type: "api_error", code: "provider_error", param: null, svc_action: "retry" },
      });
      // the same session without streaming is a 502 in the same envelope
      const whole = await post(gw, "/v1/chat/completions", ask({ stream: false }));
      expect(whole.status).toBe(502);
      expect(((await whole.json()) as { error: { code: string } }).error.code).toBe("provider_error");
    } finally {
      await gw.stop();
    }
  });

  it("before any token: the error object in a data line after the role chunk", async () => {
    const gw = await startGateway({ agentArgs: ["--test-fault", "fail-after=0"] });
    try {
      const { data } = await readSse(await post(gw, "/v1/chat/completions", ask()));
      expect(data).toHaveLength(2);
      expect(chunkOf(data[0]!).choices[0].delta).toEqual({ role: "assistant", content: "" });
      expect(chunkOf(data[1]!).error.code).toBe("provider_error");
    } finally {
      await gw.stop();
    }
  });
});
