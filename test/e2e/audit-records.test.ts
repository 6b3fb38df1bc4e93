// Issue 43 item 2 §5, the auditor as `svc-gateway serve --audit-models` runs it, before any audit: the reference
// copy's SHA-256 is accepted when it is the catalog's, requests are complete, and GET /v1/providers and the
// attestation record carry each provider's audit record and in_rotation. (The audits themselves need
// `svc-agent rescore`, which is built apart; here the floor puts the first one 30 min away.)
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Receipt } from "../../src/receipt/receipt.ts";
import { post, startGateway, type GatewayProcess } from "../fixtures/gateway.ts";
import { makeTinyCatalog } from "../fixtures/tiny-catalog.ts";

let gw: GatewayProcess;
beforeAll(async () => {
  const tiny = makeTinyCatalog([{ alias: "qwen3-4b", seed: 1 }]);
  const corpus = join(tiny.dir, "corpus.jsonl");
  writeFileSync(corpus, `${JSON.stringify({ id: "c1", kind: "chat", route: "chat", body: { messages: [{ role: "user", content: "Tell me about tides." }], max_tokens: 4 } })}\n`);
  gw = await startGateway({ tiny, args: ["--audit-models", `qwen3-4b=${tiny.files["qwen3-4b"]!.path}`, "--audit-corpus", corpus, "--audit-rate", "1000000", "--audit-floor", "60m"] });
});
afterAll(async () => {
  await gw?.stop();
  gw?.tiny.cleanup();
});

const get = (path: string) => fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${gw.key}` } });

describe("§5 Records: an auditing gateway's listings", () => {
  it("GET /v1/providers adds audits {passed, failed, last} and in_rotation to each record; the attestation record too", async () => {
    const res = await post(gw, "/v1/chat/completions", { model: "qwen3-4b", messages: [{ role: "user", content: "hi" }], max_tokens: 4 });
    expect(res.status).toBe(200);
    // --audit-models implies complete requests
    expect(((await res.json()) as { svc_receipt: Receipt }).svc_receipt.version).toBe(4);
    const providers = (await (await get("/v1/providers")).json()) as Record<string, unknown>[];
    expect(providers.map((p) => [p.id, p.audits, p.in_rotation])).toEqual([[gw.providerId, { passed: 0, failed: 0, last: null }, true]]);
    const record = (await (await get(`/v1/providers/${gw.providerId}/attestation`)).json()) as Record<string, unknown>;
    expect([record.object, record.audits, record.in_rotation]).toEqual(["provider.attestation", { passed: 0, failed: 0, last: null }, true]);
  });
});
