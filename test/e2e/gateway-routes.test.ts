// SPEC §4 listings, §5 authentication and the gateway's request log, black-box against `svc-gateway serve`.
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { get, post, startGateway, type GatewayProcess } from "../fixtures/gateway.ts";
import { runCli } from "../../harness/cli.ts";
import { CATALOG_EPOCH } from "../../src/catalog.ts";
import { canonicalJson } from "../../src/receipt/canonical-json.ts";
import { sha256Hex } from "../../src/receipt/sha256.ts";

let gw: GatewayProcess;
beforeAll(async () => {
  gw = await startGateway({ aliases: [{ alias: "qwen3-4b", seed: 1 }, { alias: "qwen3-8b", seed: 2 }, { alias: "tiny-embed", seed: 3, kind: "embedding" }] });
});
afterAll(() => gw.stop());

describe("§4.2 GET /v1/models", () => {
  it("lists the aliases that live providers at or above the floor serve", async () => {
    const res = await get(gw, "/v1/models");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      object: "list",
      data: [
        { id: "qwen3-4b", object: "model", created: CATALOG_EPOCH, owned_by: "svc", svc_kind: "chat" },
        { id: "qwen3-8b", object: "model", created: CATALOG_EPOCH, owned_by: "svc", svc_kind: "chat" },
        { id: "tiny-embed", object: "model", created: CATALOG_EPOCH, owned_by: "svc", svc_kind: "embedding" },
      ],
    });
  });

  it("a chat request naming an embedding model is a 400 naming it, before any provider is touched", async () => {
    const res = await post(gw, "/v1/chat/completions", { model: "tiny-embed", messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: {
        message: "The model 'tiny-embed' is an embedding model; POST /v1/embeddings serves it. This route serves: qwen3-4b, qwen3-8b.",
        type: "invalid_request_error",
        code: "model_kind_mismatch",
        param: "model",
        svc_action: "pick_model",
      },
    });
  });
});

describe("§4.3 GET /v1/providers", () => {
  it("returns provider records: id, model_ids, trust, busy, waiting, and no serial below hardware; evidence_sha256 names the evidence its attestation record serves", async () => {
    const res = await get(gw, "/v1/providers");
    expect(res.status).toBe(200);
    const evidence = ((await (await get(gw, `/v1/providers/${gw.providerId}/attestation`)).json()) as { evidence: unknown }).evidence;
    expect(await res.json()).toEqual([
      { id: gw.providerId, model_ids: ["qwen3-4b", "qwen3-8b", "tiny-embed"], trust: "process", busy: false, waiting: 0, evidence_sha256: sha256Hex(canonicalJson(evidence)) },
    ]);
  });

  it("the id works as a pin, whole or as an 8-character prefix, through provider or provider_key_id", async () => {
    for (const pin of [{ provider: gw.providerId }, { provider_key_id: gw.providerId.slice(0, 8) }]) {
      const res = await post(gw, "/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], max_tokens: 2, ...pin });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-svc-provider")).toBe(gw.providerId);
    }
  });
});

describe("§4.4 GET {coordinator_url}/v1/catalog", () => {
  it("is public and returns the full catalog", async () => {
    const res = await fetch(`${gw.coordinatorUrl}/v1/catalog`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { object: string; default: string; data: { alias: string; sha256: string }[] };
    expect(body.object).toBe("list");
    expect(body.default).toBe("qwen3-4b");
    expect(body.data.map((m) => [m.alias, m.sha256])).toEqual([
      ["qwen3-4b", gw.tiny.files["qwen3-4b"]!.sha256],
      ["qwen3-8b", gw.tiny.files["qwen3-8b"]!.sha256],
      ["tiny-embed", gw.tiny.files["tiny-embed"]!.sha256],
    ]);
  });

  it("another method is 405 with Allow: GET, another path 404, both in the envelope", async () => {
    const wrong = await fetch(`${gw.coordinatorUrl}/v1/catalog`, { method: "POST" });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toBe("GET");
    expect(((await wrong.json()) as { error: { code: string } }).error.code).toBe("method_not_allowed");
    const none = await fetch(`${gw.coordinatorUrl}/v1/nope`);
    expect(none.status).toBe(404);
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe("route_not_found");
  });
});

describe("§5 Authentication", () => {
  const envelope = {
    error: { message: expect.any(String), type: "invalid_request_error", code: "invalid_api_key", param: null, svc_action: "fix_key" },
  };
  const routes: [string, string][] = [
    ["POST", "/v1/chat/completions"],
    ["GET", "/v1/models"],
    ["GET", "/v1/models/qwen3-4b"],
    ["GET", "/v1/providers"],
  ];
  const headers: [string, Record<string, string>][] = [
    ["missing", {}],
    ["malformed (Basic)", { authorization: "Basic dXNlcjpwYXNz" }],
    ["malformed (Bearer without a key)", { authorization: "Bearer " }],
    ["unknown", { authorization: "Bearer sk-svc_wrong-secret-do-not-log" }],
  ];
  const cases = routes.flatMap(([method, path]) => headers.map(([kind, h]) => [method, path, kind, h] as const));

  it.each(cases)("%s %s with a %s key → 401 invalid_api_key", async (method, path, _, h) => {
    const res = await fetch(`${gw.url}${path}`, {
      method,
      headers: { "content-type": "application/json", ...h },
      body: method === "POST" ? JSON.stringify({ messages: [{ role: "user", content: "hi" }] }) : undefined,
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual(envelope);
  });

  it("an operator key from SVC_OPERATOR_KEYS is a valid bearer key (scheme case-insensitive)", async () => {
    expect((await get(gw, "/v1/models", { authorization: `bearer ${gw.key}` })).status).toBe(200);
  });

  it("keys never appear in the logs", async () => {
    await get(gw, "/v1/models", { authorization: "Bearer sk-svc_wrong-secret-do-not-log" });
    await get(gw, "/v1/models");
    const out = gw.stdout() + gw.stderr();
    expect(out).not.toContain("sk-svc_wrong-secret-do-not-log");
    expect(out).not.toContain(gw.key);
  });
});

describe("Request log", () => {
  it("one JSON line per request with id, route, status, model, provider, latency and tokens; no prompt text", async () => {
    const canary = "CANARY-prompt-text-7f3a";
    const res = await post(gw, "/v1/chat/completions", { model: "qwen3-8b", messages: [{ role: "user", content: canary }], max_tokens: 3 });
    const id = res.headers.get("x-request-id");
    await res.json();
    const line = await gw.waitForLog((l) => l.id === id);
    expect(line).toMatchObject({
      method: "POST",
      route: "/v1/chat/completions",
      status: 200,
      model: "qwen3-8b",
      provider: gw.providerId,
      completion_tokens: 3,
      prompt_tokens: expect.any(Number),
      latency_ms: expect.any(Number),
    });
    expect(gw.logs().filter((l) => l.id === id)).toHaveLength(1);
    await post(gw, "/v1/chat/completions", { messages: [{ role: "user", content: canary }], temperature: "warm" });
    expect(gw.stdout()).not.toContain(canary);
  });
});

describe("svc-gateway serve", () => {
  it("exits 1 with one line naming the port when its port is taken, and nothing before it (issue 44: not the coordinator link's log)", async () => {
    const port = new URL(gw.url).port;
    const result = await runCli("svc-gateway", ["serve", "--port", port, "--coordinator-port", "0", "--catalog", gw.tiny.catalogPath, "--data-dir", `${gw.tiny.dir}/other`]);
    expect([result.code, result.stdout, result.stderr]).toEqual([1, "", `svc-gateway: gateway port ${port} on 127.0.0.1 is already in use; pick another port\n`]);
  });

  it("the same for its coordinator's port", async () => {
    const port = new URL(gw.coordinatorUrl).port;
    const result = await runCli("svc-gateway", ["serve", "--port", "0", "--coordinator-port", port, "--catalog", gw.tiny.catalogPath, "--data-dir", `${gw.tiny.dir}/other`]);
    expect([result.code, result.stdout, result.stderr]).toEqual([1, "", `svc-gateway: coordinator port ${port} on 127.0.0.1 is already in use; pick another port\n`]);
  });
});

describe("§2.4 trust floor", () => {
  it("providers below the floor are neither listed nor used; a pin to one → 503 provider_unavailable", async () => {
    const high = await startGateway({ args: ["--trust-floor", "hardware"] });
    try {
      expect(await (await get(high, "/v1/providers")).json()).toEqual([]);
      expect(await (await get(high, "/v1/models")).json()).toEqual({ object: "list", data: [] });
      const messages = [{ role: "user", content: "hi" }];
      for (const body of [{ messages }, { messages, provider: high.providerId }]) {
        const res = await post(high, "/v1/chat/completions", body);
        expect(res.status).toBe(503);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe("provider_unavailable");
      }
    } finally {
      await high.stop();
    }
  });
});

/** Sends raw bytes on a fresh TCP connection and returns everything the gateway answers until it closes. */
function rawHttp(url: string, bytes: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(bytes));
    let answer = "";
    socket.on("data", (d: Buffer) => (answer += d.toString()));
    socket.on("close", () => resolve(answer));
    socket.on("error", reject);
  });
}

describe("§7 Errors: malformed HTTP", () => {
  it.each([
    ["a request line that is not HTTP", "GARBAGE\r\n\r\n", 400, "malformed_request"],
    ["headers over the size limit", `GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`, 431, "headers_too_large"],
  ])("%s gets the envelope (%i %s) and a closed connection", async (_, bytes, status, code) => {
    const answer = await rawHttp(gw.url, bytes);
    expect(answer.startsWith(`HTTP/1.1 ${status} `)).toBe(true);
    const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) as { error: { code: string; svc_action: string } };
    expect(body.error).toMatchObject({ code, svc_action: "fix_request" });
    expect((await get(gw, "/v1/models")).status).toBe(200); // and the gateway goes on serving
  });
});
