// Every validation row of SPEC §2.1, §7 and §8, black-box against a real `svc-gateway serve`: raw fetch,
// one table-driven test per row, each fault with its status, stable code, param path and svc_action.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { get, post, startGateway, type GatewayProcess } from "../fixtures/gateway.ts";

let gw: GatewayProcess;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(() => gw.stop());

const user = (content: unknown) => ({ role: "user", content });
const ok = { model: "qwen3-4b", messages: [user("hi")], max_tokens: 2 };

interface Row {
  row: string;
  body: unknown;
  code: string;
  param: string | null;
  status?: number;
  action?: string;
}

async function expectEnvelope(res: Response, want: Omit<Row, "row" | "body">) {
  expect(res.status).toBe(want.status ?? 400);
  expect(res.headers.get("content-type")).toBe("application/json");
  const body = (await res.json()) as { error: Record<string, unknown> };
  expect(Object.keys(body)).toEqual(["error"]);
  expect(body.error).toEqual({
    message: expect.any(String),
    type: "invalid_request_error",
    code: want.code,
    param: want.param,
    svc_action: want.action ?? "fix_request",
  });
  return body.error;
}

const table = (rows: Row[]) =>
  it.each(rows)("$row → $code ($param)", async ({ body, ...want }) => {
    await expectEnvelope(await post(gw, "/v1/chat/completions", body), want);
  });

describe("§2.1 Chat completion request", () => {
  table([
    { row: "empty model", body: { ...ok, model: "" }, code: "invalid_value", param: "model" },
    { row: "model not a string", body: { ...ok, model: 4 }, code: "invalid_type", param: "model" },
    { row: "unknown model", body: { ...ok, model: "gpt-4o" }, status: 404, code: "model_not_found", param: "model", action: "pick_model" },
    { row: "messages missing", body: { model: "qwen3-4b" }, code: "missing_field", param: "messages" },
    { row: "messages not an array", body: { ...ok, messages: "hi" }, code: "invalid_type", param: "messages" },
    { row: "messages empty", body: { ...ok, messages: [] }, code: "invalid_value", param: "messages" },
    { row: "message not an object", body: { ...ok, messages: ["hi"] }, code: "invalid_type", param: "messages[0]" },
    { row: "role missing", body: { ...ok, messages: [{ content: "hi" }] }, code: "missing_field", param: "messages[0].role" },
    { row: "role unknown", body: { ...ok, messages: [{ role: "robot", content: "hi" }] }, code: "invalid_value", param: "messages[0].role" },
    { row: "content missing", body: { ...ok, messages: [{ role: "user" }] }, code: "missing_field", param: "messages[0].content" },
    { row: "content a number", body: { ...ok, messages: [user(7)] }, code: "invalid_type", param: "messages[0].content" },
    { row: "content null", body: { ...ok, messages: [user(null)] }, code: "invalid_type", param: "messages[0].content" },
    {
      row: "content part image_url",
      body: { ...ok, messages: [user("a"), user("b"), user("c"), user([{ type: "image_url", image_url: { url: "https://x/y.png" } }])] },
      code: "unsupported_content_part",
      param: "messages[3].content[0].type",
    },
    { row: "content part without text", body: { ...ok, messages: [user([{ type: "text" }])] }, code: "missing_field", param: "messages[0].content[0].text" },
    { row: "content part not an object", body: { ...ok, messages: [user(["hi"])] }, code: "invalid_type", param: "messages[0].content[0]" },
    { row: "fractional max_tokens", body: { ...ok, max_tokens: 1.5 }, code: "invalid_type", param: "max_tokens" },
    { row: "max_tokens as a string", body: { ...ok, max_tokens: "5" }, code: "invalid_type", param: "max_tokens" },
    { row: "max_tokens zero", body: { ...ok, max_tokens: 0 }, code: "invalid_value", param: "max_tokens" },
    { row: "max_tokens beyond safe integers", body: { ...ok, max_tokens: 1e300 }, code: "invalid_value", param: "max_tokens" },
    { row: "fractional max_completion_tokens", body: { ...ok, max_tokens: undefined, max_completion_tokens: 2.5 }, code: "invalid_type", param: "max_completion_tokens" },
    { row: "boolean temperature", body: { ...ok, temperature: true }, code: "invalid_type", param: "temperature" },
    { row: "numeric-string temperature", body: { ...ok, temperature: "0.5" }, code: "invalid_type", param: "temperature" },
    { row: "temperature out of range", body: { ...ok, temperature: 3 }, code: "invalid_value", param: "temperature" },
    { row: "stream not a boolean", body: { ...ok, stream: "yes" }, code: "invalid_type", param: "stream" },
    { row: "provider pin under 8 characters", body: { ...ok, provider: "abc" }, code: "invalid_value", param: "provider" },
    { row: "provider_key_id pin under 8 characters", body: { ...ok, provider_key_id: "abc" }, code: "invalid_value", param: "provider_key_id" },
    { row: "provider pin not hex", body: { ...ok, provider: "my-favourite-mac" }, code: "invalid_value", param: "provider" },
    { row: "provider not a string", body: { ...ok, provider: 12345678 }, code: "invalid_type", param: "provider" },
    { row: "stream_options not an object", body: { ...ok, stream_options: true }, code: "invalid_type", param: "stream_options" },
  ]);

  it("an unknown model opens no provider session", async () => {
    const res = await post(gw, "/v1/chat/completions", { ...ok, model: "no-such-model" });
    const id = res.headers.get("x-request-id");
    expect(res.status).toBe(404);
    const line = await gw.waitForLog((l) => l.id === id);
    expect(line).toMatchObject({ status: 404, code: "model_not_found" });
    expect(line.provider).toBeUndefined();
  });

  it.each([
    ["the alias", "qwen3-4b"],
    ["the model-hub id, any case", "SVC-TEST/tiny-qwen3-4b-gguf"],
    ["svc-local", "svc-local"],
  ])("model given as %s is served as the alias", async (_, model) => {
    const res = await post(gw, "/v1/chat/completions", { ...ok, model });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-svc-model")).toBe("qwen3-4b");
    expect(((await res.json()) as { model: string }).model).toBe(model);
  });

  it("text and input_text parts are accepted", async () => {
    const parts = [{ type: "text", text: "a" }, { type: "input_text", text: "b" }];
    expect((await post(gw, "/v1/chat/completions", { ...ok, messages: [user(parts)] })).status).toBe(200);
  });

  const completionTokens = async (body: unknown) => {
    const res = await post(gw, "/v1/chat/completions", body);
    expect(res.status).toBe(200);
    return ((await res.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens;
  };

  // the tiny model never ends its turn on its own, so it writes exactly the budget it is given
  it("max_tokens defaults to 512", async () => {
    expect(await completionTokens({ messages: [user("hi")] })).toBe(512);
  });

  it("max_completion_tokens is an alias of max_tokens; max_tokens wins when both are present", async () => {
    expect(await completionTokens({ messages: [user("hi")], max_completion_tokens: 5 })).toBe(5);
    expect(await completionTokens({ messages: [user("hi")], max_tokens: 3, max_completion_tokens: 5 })).toBe(3);
  });
});

describe("§7 Errors: other malformed input", () => {
  const raw = (body: string | Uint8Array, contentType: string | null = "application/json") =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.key}`, ...(contentType ? { "content-type": contentType } : {}) },
      body,
    });

  it.each([
    ["malformed JSON", () => raw('{"model": "qwen3-4b",'), "invalid_json"],
    ["an empty body", () => raw(""), "invalid_json"],
    ["invalid UTF-8", () => raw(new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d])), "invalid_json"],
    ["a JSON array body", () => raw("[]"), "invalid_type"],
    ["a JSON null body", () => raw("null"), "invalid_type"],
    ["a JSON string body", () => raw('"hello"'), "invalid_type"],
    ["wrong content type", () => raw(JSON.stringify(ok), "text/plain"), "invalid_content_type"],
    ["no content type", () => raw(JSON.stringify(ok), null), "invalid_content_type"],
  ])("%s → 400 %s", async (_, send, code) => {
    await expectEnvelope(await send(), { code, param: null });
  });

  it("a content type with a charset parameter is JSON", async () => {
    expect((await raw(JSON.stringify(ok), "application/json; charset=utf-8")).status).toBe(200);
  });

  it("a body over the cap → 413 in the same envelope, declared or streamed", async () => {
    const big = JSON.stringify({ ...ok, messages: [user("a".repeat(5 * 1024 * 1024))] });
    await expectEnvelope(await raw(big), { status: 413, code: "body_too_large", param: null });
    const chunks = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode(big));
        c.close();
      },
    });
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.key}`, "content-type": "application/json" },
      body: chunks,
      duplex: "half",
    } as RequestInit);
    await expectEnvelope(res, { status: 413, code: "body_too_large", param: null });
  });

  it("unknown routes → 404 JSON, wrong method → 405 JSON with Allow", async () => {
    await expectEnvelope(await get(gw, "/v1/nope"), { status: 404, code: "route_not_found", param: null });
    await expectEnvelope(await get(gw, "/"), { status: 404, code: "route_not_found", param: null });
    const wrong = await get(gw, "/v1/chat/completions");
    expect(wrong.headers.get("allow")).toBe("POST");
    await expectEnvelope(wrong, { status: 405, code: "method_not_allowed", param: null });
    await expectEnvelope(await post(gw, "/v1/models", {}), { status: 405, code: "method_not_allowed", param: null });
  });
});

describe("§8 Limits", () => {
  table([
    { row: "101 messages", body: { ...ok, messages: Array(101).fill(user("x")) }, code: "too_many_messages", param: "messages" },
    { row: "256 KiB + 1 characters of content", body: { ...ok, messages: [user("a".repeat(256 * 1024 + 1))] }, code: "content_too_large", param: "messages" },
  ]);

  it("100 messages are served", async () => {
    expect((await post(gw, "/v1/chat/completions", { ...ok, messages: Array(100).fill(user("x")) })).status).toBe(200);
  });

  it("a prompt longer than the model's context → 400 context_length_exceeded", async () => {
    const res = await post(gw, "/v1/chat/completions", { ...ok, messages: [user("word ".repeat(3000))] });
    await expectEnvelope(res, { code: "context_length_exceeded", param: "messages" });
  });

  it("a max_tokens the model's context cannot hold after the prompt → 400 context_length_exceeded naming the limit", async () => {
    const res = await post(gw, "/v1/chat/completions", { ...ok, max_tokens: 1_000_000_000 });
    const error = await expectEnvelope(res, { code: "context_length_exceeded", param: "max_tokens" });
    expect(error.message).toMatch(/^max_tokens is 1000000000, but after the prompt's \d+ tokens qwen3-4b has room for at most \d+ \(8192 tokens of prompt and answer together\)/);
  });
});
