// DESIGN §10, createSealedFetch against a fake gateway (real evidence, real sealing): it never sends a plaintext
// body, refuses a route it does not seal, answers a body's fault itself as the gateway would, and turns the gateway's
// failure to find a provider into what the normal path sends at that point (a stream's error event after its head).
import { randomBytes } from "node:crypto";
import { describe, expect, it, vi } from "vitest";
import { BUNDLED_CATALOG } from "../../../client/bundled-catalog.ts";
import { createSealedFetch } from "../../../client/index.ts";
import { loadCatalog } from "../../../src/catalog-file.ts";
import { ApiError } from "../../../src/errors.ts";
import { FAKE_BASE, fakeBlindGateway } from "../../fixtures/fake-blind-gateway.ts";

const BASE = FAKE_BASE;
const CANARY = `canary-${randomBytes(8).toString("hex")}`;

const fakeGateway = (answer: () => Response, catalog?: unknown) => fakeBlindGateway(createSealedFetch, answer, catalog);

const chat = (body: Record<string, unknown>) => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "qwen3-4b", messages: [{ role: "user", content: CANARY }], ...body }) });
const unavailable = () => Response.json(new ApiError("provider_unavailable", "No provider is available.").toEnvelope(), { status: 503 });

describe("DESIGN §10 Gateway-blind: what createSealedFetch sends, and what it answers without the gateway", () => {
  it("only sealed bytes leave it: the POST is application/svc-sealed+json and holds no prompt text", async () => {
    const { sealed, posted } = await fakeGateway(unavailable);
    await sealed(`${BASE}/chat/completions`, chat({}));
    expect(posted).toHaveLength(1);
    expect(posted[0]!.type).toBe("application/svc-sealed+json");
    expect(posted[0]!.body).not.toContain(CANARY);
    expect(JSON.parse(posted[0]!.body)).toMatchObject({ v: 1, kind: "chat", alias: "qwen3-4b", stream: false });
  });

  it("a route it does not seal is refused, a body's fault answered as the gateway would: nothing is sent either way", async () => {
    const { sealed, posted } = await fakeGateway(unavailable);
    await expect(sealed(`${BASE}/files`, chat({}))).rejects.toThrow(/is not a route it seals.*nothing was sent/);
    const fault = await sealed(`${BASE}/chat/completions`, chat({ temperature: "warm" }));
    expect(fault.status).toBe(400);
    expect(((await fault.json()) as { error: { param: string } }).error.param).toBe("temperature");
    expect(posted).toHaveLength(0);
  });

  it("without WebCrypto (a browser page outside a secure context) it refuses at once, naming why", () => {
    vi.stubGlobal("crypto", { getRandomValues: globalThis.crypto.getRandomValues.bind(globalThis.crypto) });
    try {
      expect(() => createSealedFetch({ baseURL: BASE })).toThrow("svc sealed fetch: WebCrypto (crypto.subtle) is unavailable: serve this page over https (or from localhost); nothing can be sealed");
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it("takes its trust anchors as strings, and refuses one that is not an anchor before anything is sent", () => {
    expect(() => createSealedFetch({ baseURL: BASE, trustedRoots: ["not a certificate"] })).toThrow("trustedRoots[0] holds no PEM certificate");
    expect(() => createSealedFetch({ baseURL: BASE, releaseKeys: ["00"] })).toThrow("releaseKeys[0]:1: expected a 64-hex-character Ed25519 public key");
  });

  it("takes svc's models.lock.json, bundled, unless the caller gives a catalog, which then replaces it", async () => {
    expect(BUNDLED_CATALOG).toEqual(loadCatalog());
    const bundled = await fakeGateway(unavailable);
    expect((await bundled.sealed(`${BASE}/chat/completions`, chat({}))).status).toBe(503);
    expect(bundled.posted).toHaveLength(1);
    const own = loadCatalog();
    const only8b = { ...own, default: "qwen3-8b", models: own.models.filter((m) => m.alias !== "qwen3-4b") };
    const replaced = await fakeGateway(unavailable, only8b);
    const fault = await replaced.sealed(`${BASE}/chat/completions`, chat({}));
    expect(fault.status).toBe(404);
    expect(((await fault.json()) as { error: { code: string } }).error.code).toBe("model_not_found");
    expect(replaced.posted).toHaveLength(0);
  });

  it("no provider: a whole answer is the gateway's 503 as it came; a stream is the normal path's head and error event, no [DONE]", async () => {
    const { sealed } = await fakeGateway(unavailable);
    const whole = await sealed(`${BASE}/chat/completions`, chat({}));
    expect(whole.status).toBe(503);
    expect(((await whole.json()) as { error: { code: string } }).error.code).toBe("provider_unavailable");
    const stream = await sealed(`${BASE}/chat/completions`, chat({ stream: true }));
    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toBe("text/event-stream");
    const events = (await stream.text()).split("\n\n").filter((e) => e !== "");
    expect(events).toHaveLength(2);
    expect(JSON.parse(events[0]!.slice(6))).toMatchObject({ object: "chat.completion.chunk", choices: [{ delta: { role: "assistant" } }] });
    expect(JSON.parse(events[1]!.slice(6))).toMatchObject({ error: { code: "provider_unavailable" } });
  });

  it("a request its candidates fail lists afresh next time, but fetches the provider's evidence only once while its digest stands", async () => {
    const { sealed, got, providerId } = await fakeGateway(unavailable);
    for (let i = 0; i < 3; i++) expect((await sealed(`${BASE}/chat/completions`, chat({}))).status).toBe(503);
    expect(got).toEqual(["/v1/providers", `/v1/providers/${providerId}/attestation`, "/v1/providers", "/v1/providers"]);
  });
});
