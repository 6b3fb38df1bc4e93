// Issue 43 items 2 and 4 §4–§5, the auditor as `svc-gateway serve --audit-models` runs it: the reference copy's SHA-256
// is accepted when it is the catalog's, requests are complete, GET /v1/providers and the attestation record carry each
// provider's audit record and in_rotation; with every placement drawn, an honest agent's audits, re-scored by the
// package's own `svc-agent rescore` on the same GGUF, pass and leave it in rotation (and are never published); a
// provider whose logprobs are made up fails, leaves rotation, and leaves signed evidence that GET /v1/audits/{id}
// serves to anyone and `svc-agent verify --audit` reproduces with the pinned GGUF and the key GET /v1/audits/key names.
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../harness/cli.ts";
import { evidenceSha256, parseEvidence } from "../../src/audit/evidence.ts";
import type { Receipt } from "../../src/receipt/receipt.ts";
import { post, startGateway, type GatewayProcess } from "../fixtures/gateway.ts";
import { makeTinyCatalog } from "../fixtures/tiny-catalog.ts";

/** An auditing gateway that draws (almost) no audits; one whose every placement draws one, of an honest agent; and one
 * of an agent whose signed logprobs are made up. The three are apart, so they start side by side. */
let gw: GatewayProcess;
let honest: GatewayProcess;
let madeUp: GatewayProcess;
/** An auditing gateway on its own catalog, re-scoring with the catalog's GGUF, on a corpus of `items`. */
async function auditing(items: Record<string, unknown>[], args: string[], agentArgs?: string[]): Promise<GatewayProcess> {
  const tiny = makeTinyCatalog([{ alias: "qwen3-4b", seed: 1 }]);
  const corpus = join(tiny.dir, "corpus.jsonl");
  writeFileSync(corpus, items.map((i) => JSON.stringify(i)).join("\n"));
  return startGateway({ tiny, agentArgs, args: ["--audit-models", `qwen3-4b=${tiny.files["qwen3-4b"]!.path}`, "--audit-corpus", corpus, ...args] });
}
beforeAll(async () => {
  const tides = (maxTokens: number) => ({ id: "chat", kind: "chat", route: "chat", body: { messages: [{ role: "user", content: "Tell me about tides." }], max_tokens: maxTokens } });
  const started = await Promise.allSettled([
    auditing([{ ...tides(4), id: "c1" }], ["--audit-rate", "1000000", "--audit-floor", "60m"]),
    auditing(
      [
        tides(8),
        { id: "legacy", kind: "chat", route: "completions", body: { prompt: "Once upon a time", max_tokens: 8, temperature: 0 } },
        { id: "responses", kind: "chat", route: "responses", body: { input: "Name three rivers.", max_output_tokens: 8, stream: true } },
      ],
      ["--audit-rate", "1", "--audit-delay", "10ms"],
    ),
    // its receipts verify (it signs the values it sends), each logprob 0.1 nats below the model's: a Q4-sized lie
    auditing([tides(8)], ["--audit-rate", "1", "--audit-delay", "10ms"], ["--test-fault", "logprob-shift=100"]),
  ]);
  // whichever started is stopped by afterAll, also when another did not
  [gw, honest, madeUp] = started.map((s) => (s.status === "fulfilled" ? s.value : undefined)) as [GatewayProcess, GatewayProcess, GatewayProcess];
  const failed = started.find((s) => s.status === "rejected");
  if (failed) throw failed.reason;
});
afterAll(async () => {
  await Promise.all([gw, honest, madeUp].map((g) => g?.stop()));
  for (const g of [gw, honest, madeUp]) g?.tiny.cleanup();
});

const get = (path: string) => fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${gw.key}` } });

describe("§5 Records: an auditing gateway's listings", () => {
  it("GET /v1/providers adds audits {passed, failed, suspect, barring, last} and in_rotation to each record; the attestation record too, with failures", async () => {
    const res = await post(gw, "/v1/chat/completions", { model: "qwen3-4b", messages: [{ role: "user", content: "hi" }], max_tokens: 4 });
    expect(res.status).toBe(200);
    // --audit-models implies complete requests
    expect(((await res.json()) as { svc_receipt: Receipt }).svc_receipt.version).toBe(4);
    const providers = (await (await get("/v1/providers")).json()) as Record<string, unknown>[];
    expect(providers.map((p) => [p.id, p.audits, p.in_rotation])).toEqual([[gw.providerId, { passed: 0, failed: 0, suspect: 0, barring: 0, last: null }, true]]);
    const record = (await (await get(`/v1/providers/${gw.providerId}/attestation`)).json()) as Record<string, unknown>;
    expect([record.object, record.audits, record.in_rotation, record.failures]).toEqual(["provider.attestation", { passed: 0, failed: 0, suspect: 0, barring: 0, last: null }, true, []]);
  });

  it("the audit key is made in the data dir (0600), served publicly on GET /v1/audits/key, and printed by svc-gateway audit-key", async () => {
    const dataDir = join(gw.tiny.dir, "gateway");
    expect(statSync(join(dataDir, "audit-key")).mode & 0o777).toBe(0o600);
    const res = await fetch(`${gw.url}/v1/audits/key`);
    const served = (await res.json()) as { object: string; key: string };
    expect([res.status, served.object, served.key]).toEqual([200, "audit.key", expect.stringMatching(/^[0-9a-f]{64}$/)]);
    const printed = await runCli("svc-gateway", ["audit-key", "--data-dir", dataDir]);
    expect([printed.code, printed.stdout.trim()]).toEqual([0, served.key]);
  });
});

describe("§4 Audits of an honest provider", () => {
  it("each ordinary session draws an audit (rate 1); the re-scored answers pass, and the provider stays in rotation", { timeout: 360_000 }, async () => {
    const N = 4;
    for (let i = 0; i < N; i++) {
      const res = await post(honest, "/v1/chat/completions", { model: "qwen3-4b", messages: [{ role: "user", content: `hello ${i}` }], max_tokens: 4 });
      expect(res.status).toBe(200);
    }
    // the audits' verdicts, as the log says them: every one passes (each placement drew one; the audits draw none)
    const verdictsNow = () => honest.logs().filter((l) => typeof l.msg === "string" && l.msg.startsWith("audit aud_")).map((l) => l.verdict);
    await expect.poll(() => verdictsNow().length, { timeout: 300_000, interval: 200 }).toBeGreaterThanOrEqual(N);
    expect(verdictsNow()).toEqual(Array(N).fill("pass"));
    const listed = (await (await fetch(`${honest.url}/v1/providers`, { headers: { authorization: `Bearer ${honest.key}` } })).json()) as { audits: { passed: number; failed: number; last: { id: string; verdict: string } }; in_rotation: boolean }[];
    expect([listed[0]!.audits.passed, listed[0]!.audits.failed, listed[0]!.audits.last.verdict, listed[0]!.in_rotation]).toEqual([N, 0, "pass", true]);
    // a pass is never published: its prompt is the operator's private corpus
    const unpublished = await fetch(`${honest.url}/v1/audits/${listed[0]!.audits.last.id}`);
    expect([unpublished.status, ((await unpublished.json()) as { error: { code: string } }).error.code]).toEqual([404, "audit_not_found"]);
  });
});

describe("§5 A provider whose signed logprobs are made up", () => {
  it("its first audit fails: it leaves rotation at once, a pin to it is 503 naming the audit, and the listing shows the failure", { timeout: 360_000 }, async () => {
    const ask = (extra: Record<string, unknown> = {}) => post(madeUp, "/v1/chat/completions", { model: "qwen3-4b", messages: [{ role: "user", content: "hello" }], max_tokens: 4, ...extra });
    // the caller's own answer is served: its receipt is sound, only a re-score can tell
    expect((await ask()).status).toBe(200);
    const line = await madeUp.waitForLog((l) => typeof l.msg === "string" && l.msg.startsWith("audit aud_"), 300_000);
    expect(line.verdict).toBe("fail");
    const listed = (await (await fetch(`${madeUp.url}/v1/providers`, { headers: { authorization: `Bearer ${madeUp.key}` } })).json()) as { audits: { passed: number; failed: number; barring: number; last: { id: string; verdict: string } }; in_rotation: boolean }[];
    expect([listed[0]!.audits.passed, listed[0]!.audits.failed, listed[0]!.audits.barring, listed[0]!.audits.last.verdict, listed[0]!.in_rotation]).toEqual([0, 1, 1, "fail", false]);
    // no one else is left, and still it is not taken; pinned, the refusal names the audit
    const unpinned = await ask();
    expect([unpinned.status, ((await unpinned.json()) as { error: { code: string } }).error.code]).toEqual([503, "provider_unavailable"]);
    const pinned = await ask({ provider: madeUp.providerId });
    const error = ((await pinned.json()) as { error: { code: string; message: string } }).error;
    expect([pinned.status, error.code, error.message]).toEqual([503, "provider_unavailable", expect.stringContaining(`failed audit ${listed[0]!.audits.last.id}`)]);
  });

  it("its evidence is kept, served to anyone on GET /v1/audits/{id}, listed on the attestation record, and reproduces fail with the pinned GGUF", { timeout: 120_000 }, async () => {
    const id = ((await (await fetch(`${madeUp.url}/v1/providers`, { headers: { authorization: `Bearer ${madeUp.key}` } })).json()) as { audits: { last: { id: string } } }[])[0]!.audits.last.id;
    // on SQLite the evidence is a file in the data dir, owner-only
    const kept = join(madeUp.tiny.dir, "gateway", "audits", `${id}.json`);
    expect(statSync(kept).mode & 0o777).toBe(0o600);
    // no key needed: anyone re-checks it
    const res = await fetch(`${madeUp.url}/v1/audits/${id}`);
    expect([res.status, res.headers.get("content-type")]).toEqual([200, "application/json"]);
    const text = await res.text();
    expect(text).toBe(readFileSync(kept, "utf8"));
    const evidence = parseEvidence(text);
    const key = ((await (await fetch(`${madeUp.url}/v1/audits/key`)).json()) as { key: string }).key;
    expect([evidence.id, evidence.verdict, evidence.provider.id, evidence.auditor.key, evidence.model.sha256]).toEqual([id, "fail", madeUp.providerId, key, madeUp.tiny.catalog.models[0]!.sha256]);
    // the fault shifts every logprob 0.1 nats: far above the threshold, so "fail" is the verdict verify must reproduce
    expect(evidence.statistic.mean).toBeGreaterThan(10 * evidence.statistic.fail_mean);
    const record = (await (await fetch(`${madeUp.url}/v1/providers/${madeUp.providerId}/attestation`, { headers: { authorization: `Bearer ${madeUp.key}` } })).json()) as { failures: unknown[]; in_rotation: boolean };
    expect([record.failures, record.in_rotation]).toEqual([[{ id, at: evidence.created, evidence_sha256: evidenceSha256(evidence), url: `/v1/audits/${id}` }], false]);
    const file = join(madeUp.tiny.dir, "evidence.json");
    writeFileSync(file, text);
    const verify = await runCli("svc-agent", ["verify", "--audit", file, "--model", madeUp.tiny.files["qwen3-4b"]!.path, "--auditor-key", key]);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    expect(verify.stdout).toContain("  --    max |stored - recomputed reference| 0\n");
    expect(verify.stdout.trimEnd().split("\n").at(-1)).toBe(`REPRODUCED: fail: audit ${id} of provider ${madeUp.providerId} (evidence sha256 ${evidenceSha256(evidence)})`);
    // an id no failure has, and one that is not an audit id at all, are the same 404
    for (const other of ["aud_" + "0".repeat(24), "..%2Fkeys.sqlite"]) {
      const missing = await fetch(`${madeUp.url}/v1/audits/${other}`);
      expect([missing.status, ((await missing.json()) as { error: { code: string } }).error.code]).toEqual([404, "audit_not_found"]);
    }
  });
});
