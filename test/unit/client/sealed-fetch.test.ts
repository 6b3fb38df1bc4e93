// DESIGN §10, createSealedFetch against a fake gateway (real evidence, real sealing): it never sends a plaintext
// body, refuses a route it does not seal, answers a body's fault itself as the gateway would, and turns the gateway's
// failure to find a provider into what the normal path sends at that point (a stream's error event after its head).
// What it refuses itself reaches the SDK as an error envelope naming why, never as a thrown fetch (which the SDKs
// retry as a "Connection error."), and marked x-should-retry: false; a stream already begun errors with that error.
import { randomBytes } from "node:crypto";
import { describe, expect, it, vi } from "vitest";
import { BUNDLED_CATALOG } from "../../../client/bundled-catalog.ts";
import { createSealedFetch, type SealedFetchOptions } from "../../../client/index.ts";
import { loadCatalog } from "../../../src/catalog-file.ts";
import { ApiError } from "../../../src/errors.ts";
import { FAKE_BASE, fakeBlindGateway, relayed, type FakeFrame } from "../../fixtures/fake-blind-gateway.ts";

const BASE = FAKE_BASE;
const CANARY = `canary-${randomBytes(8).toString("hex")}`;

const fakeGateway = (answer: (body: string) => Response | Promise<Response>, options: Partial<SealedFetchOptions> = {}) => fakeBlindGateway(createSealedFetch, answer, options);

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
    const elsewhere = await sealed(`${BASE}/files`, chat({}));
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.headers.get("x-should-retry")).toBe("false");
    expect(((await elsewhere.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: "route_not_found", message: expect.stringMatching(/^svc sealed fetch: POST \/v1\/files is not a route it seals .*; nothing was sent$/) });
    const put = await sealed(`${BASE}/chat/completions`, { ...chat({}), method: "PUT" });
    expect([put.status, ((await put.json()) as { error: { code: string } }).error.code]).toEqual([405, "method_not_allowed"]);
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
    const replaced = await fakeGateway(unavailable, { catalog: only8b });
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
});

/** A refusal as an SDK reads it: status, the retry header, and the envelope. */
async function refusalOf(res: Response) {
  return { status: res.status, retry: res.headers.get("x-should-retry"), error: ((await res.json()) as { error: { code: string; message: string; type: string; svc_action: string } }).error };
}

describe("DESIGN §10 Gateway-blind: what createSealedFetch refuses reaches the SDK as an error envelope naming why", () => {
  const delta = (text: string): FakeFrame => ({ text: JSON.stringify({ type: "delta", text }), final: false });

  /** A fake gateway whose relay answers each POST with the lines `lines` makes of the provider's sealed `frames`. */
  async function relaying(frames: readonly FakeFrame[], lines: (sealed: string[], n: number) => string[] = (sealed) => sealed) {
    let n = 0;
    const gw = await fakeGateway(async (body) => relayed(lines(await gw.relayLines(body, frames), n++)));
    return gw;
  }

  it("no provider passes the caller's checks: 503 provider_unavailable naming each one and why, nothing sent", async () => {
    const { sealed, posted, providerId } = await fakeGateway(unavailable, { floor: "hardware" });
    const { status, retry, error } = await refusalOf(await sealed(`${BASE}/chat/completions`, chat({})));
    expect({ status, retry }).toEqual({ status: 503, retry: "false" });
    expect(error).toEqual({
      code: "provider_unavailable", type: "api_error", svc_action: "wait", param: null,
      message: `svc sealed fetch: no provider of qwen3-4b passed the caller's checks (${providerId.slice(0, 12)}: its evidence proves process, below the floor hardware); nothing was sent`,
    });
    expect(posted).toHaveLength(0);
  });

  it("the gateway's own refusal of its listing (a bad key) reaches the SDK as it came", async () => {
    const { sealed, posted } = await fakeBlindGateway(createSealedFetch, unavailable, {
      fetch: async () => Response.json(new ApiError("invalid_api_key", "Invalid API key.").toEnvelope(), { status: 401 }),
    });
    const { status, error } = await refusalOf(await sealed(`${BASE}/chat/completions`, chat({})));
    expect([status, error.code, error.message]).toEqual([401, "invalid_api_key", "Invalid API key."]);
    expect(posted).toHaveLength(0);
  });

  it("a listing or evidence that is not JSON is a refusal naming it, not a thrown fetch", async () => {
    const gw = await fakeGateway(unavailable);
    gw.gets.override = (path) => (path.endsWith("/attestation") ? new Response("<html>") : undefined);
    const evidence = await refusalOf(await gw.sealed(`${BASE}/chat/completions`, chat({})));
    expect([evidence.status, evidence.error.message]).toEqual([503, `svc sealed fetch: no provider of qwen3-4b passed the caller's checks (${gw.providerId.slice(0, 12)}: its attestation record is malformed); nothing was sent`]);
    gw.gets.override = (path) => (path === "/v1/providers" ? new Response("<html>") : undefined);
    const listing = await refusalOf(await gw.sealed(`${BASE}/chat/completions`, chat({})));
    expect([listing.status, listing.error.message]).toEqual([503, "svc sealed fetch: the gateway's provider listing is not a list of providers; nothing was sent"]);
    expect(gw.posted).toHaveLength(0);
  });

  it("an answer that is not sealed frames: 502 sealed_answer_invalid", async () => {
    const { sealed } = await fakeGateway(() => Response.json({ id: "chatcmpl-1", choices: [] }));
    const { status, retry, error } = await refusalOf(await sealed(`${BASE}/chat/completions`, chat({})));
    expect({ status, retry, code: error.code, type: error.type }).toEqual({ status: 502, retry: "false", code: "sealed_answer_invalid", type: "api_error" });
    expect(error.message).toBe("svc sealed fetch: the gateway answered application/json, not sealed frames; the answer is refused");
  });

  it("a frame that does not open: 502 sealed_answer_invalid", async () => {
    const flip = (sealed: string[]) => sealed.map((l) => (/^[fF] /.test(l) ? `${l.slice(0, 10)}${l[10] === "A" ? "B" : "A"}${l.slice(11)}` : l));
    const { sealed } = await relaying([delta("Hi"), { text: JSON.stringify({ type: "done", receipt: {} }), final: true }], flip);
    const { status, retry, error } = await refusalOf(await sealed(`${BASE}/chat/completions`, chat({})));
    expect({ status, retry, code: error.code }).toEqual({ status: 502, retry: "false", code: "sealed_answer_invalid" });
    expect(error.message).toBe("svc sealed fetch: an answer frame does not open: tampered, out of order, from another provider or request; the answer is refused");
  });

  it("a provider outside the candidates: 502 sealed_answer_invalid naming it", async () => {
    const other = "ab".repeat(32);
    const { sealed } = await relaying([delta("Hi")], (lines) => [`p ${other}`, ...lines.slice(1)]);
    const { status, error } = await refusalOf(await sealed(`${BASE}/chat/completions`, chat({})));
    expect([status, error.code]).toEqual([502, "sealed_answer_invalid"]);
    expect(error.message).toBe(`svc sealed fetch: the gateway relayed an answer from provider ${other}, which is not one of the request's candidates; the answer is refused`);
  });

  it("an answer replayed onto another request does not open: 502 sealed_answer_invalid", async () => {
    let first: string[] | undefined;
    const { sealed, posted } = await relaying([delta("Hi")], (lines) => (first ??= lines));
    await sealed(`${BASE}/chat/completions`, chat({})).then((r) => r.text());
    const { status, error } = await refusalOf(await sealed(`${BASE}/chat/completions`, chat({})));
    expect(posted).toHaveLength(2);
    expect([status, error.code]).toEqual([502, "sealed_answer_invalid"]);
    expect(error.message).toMatch(/^svc sealed fetch: an answer frame does not open: .*; the answer is refused$/);
  });

  it("a whole answer cut before its final frame: 502 sealed_answer_invalid", async () => {
    const { sealed } = await relaying([delta("Hi")]);
    const { status, error } = await refusalOf(await sealed(`${BASE}/chat/completions`, chat({})));
    expect([status, error.code, error.message]).toEqual([502, "sealed_answer_invalid", "svc sealed fetch: the relayed answer was cut before its final frame; the answer is refused"]);
  });

  it("a receipt that does not verify: 502 sealed_answer_invalid naming the provider and the problems", async () => {
    const { sealed, providerId } = await relaying([{ text: JSON.stringify({ type: "done", receipt: { provider_id: "x" }, pieces: [{ type: "delta", text: "Hi" }] }), final: true }]);
    const { status, error } = await refusalOf(await sealed(`${BASE}/chat/completions`, chat({})));
    expect([status, error.code]).toEqual([502, "sealed_answer_invalid"]);
    expect(error.message).toMatch(new RegExp(`^svc sealed fetch: the receipt from provider ${providerId} did not verify \\(.+\\); the answer is refused$`));
  });

  it("a stream cut after its head: the stream errors with that ApiError, after the pieces that opened", async () => {
    const { sealed } = await relaying([delta("Hi")]);
    const res = await sealed(`${BASE}/chat/completions`, chat({ stream: true }));
    expect(res.status).toBe(200);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    const error = await (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return undefined;
        text += value;
      }
    })().catch((err: unknown) => err);
    expect(text).toContain('"content":"Hi"');
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 502, code: "sealed_answer_invalid", message: "svc sealed fetch: the relayed answer was cut before its final frame; the answer is refused" });
  });
});
