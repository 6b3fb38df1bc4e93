// DESIGN §5 receipts end to end: a standalone coordinator, a gateway, honest agents at the process and hardware
// rungs, and agents whose test-only fault switch makes them send the receipts a broken or dishonest provider
// would. The gateway must refuse each one; `svc-agent verify` must refuse each doctored file.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { providerIdOf } from "../../src/receipt/provider-id.ts";
import type * as PackageEntry from "../../index.js";
import { payloadOf, signReceipt, verifyReceipt, type Receipt } from "../../src/receipt/receipt.ts";
import { readSavedResponse, verifySavedResponse } from "../../src/receipt/saved-response.ts";
import { Signer } from "../../src/crypto/signing.ts";
import { runCli, runNode, type CliResult } from "../../harness/cli.ts";
import { startCluster, type Cluster } from "../fixtures/cluster.ts";
import { listProviders, post, waitForProvider, type AgentProcess } from "../fixtures/gateway.ts";
import type { Proc } from "../../harness/process.ts";
import { readSse } from "../../harness/sse.ts";

let cluster: Cluster;
let gateway: Proc & { url: string; key: string };
const agents: Record<string, AgentProcess> = {};
let replayFile: string;

beforeAll(async () => {
  cluster = await startCluster();
  replayFile = join(cluster.tiny.dir, "replayed-receipt.json");
  // the gateway and the agents need only the coordinator: they start side by side
  const faults = ["tamper", "swap-key", "response-hash", `replay:${replayFile}`];
  const [started, [honest, hardware, ...faulty]] = await Promise.all([
    cluster.startGateway(),
    Promise.all([
      cluster.startAgent("process"),
      cluster.startAgent("hardware"),
      ...faults.map((fault) => cluster.startAgent("process", { args: ["--test-fault", `receipt=${fault}`] })),
    ]),
  ]);
  [gateway, agents.honest, agents.hardware] = [started, honest!, hardware!];
  faults.forEach((fault, i) => (agents[fault.split(":")[0]!] = faulty[i]!));
  await Promise.all(Object.values(agents).map((agent) => waitForProvider(gateway, agent.providerId)));
}, 120_000);
afterAll(() => cluster.stop());

interface Completion {
  choices: { message: { content: string }; finish_reason: string }[];
  usage: Receipt["usage"];
  svc_receipt: Receipt;
}

const messages = [{ role: "user", content: "Say hello." }];
const chat = (agent: AgentProcess, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  post(gateway, "/v1/chat/completions", { messages, max_tokens: 8, provider: agent.providerId, ...extra }, { headers });

async function completion(agent: AgentProcess, headers: Record<string, string> = {}): Promise<{ text: string; body: Completion }> {
  const res = await chat(agent, {}, headers);
  expect(res.status).toBe(200);
  const text = await res.text();
  return { text, body: JSON.parse(text) as Completion };
}

async function expectApiError(res: Response, status: number, error: Record<string, unknown>): Promise<{ error: { message: string } }> {
  expect(res.status).toBe(status);
  const body = (await res.json()) as { error: { message: string } };
  expect(body).toEqual({ error: { message: expect.any(String), type: "invalid_request_error", param: null, ...error } });
  return body;
}

const attestedKey = (agent: AgentProcess) =>
  (JSON.parse(readFileSync(join(agent.dataDir, "agent-keys.json"), "utf8")) as { signing_seed: string }).signing_seed;

describe("§2.2 svc_receipt on a non-stream answer", () => {
  it("is signed by the provider's attested key; usage and finish_reason are copied from it", async () => {
    const { body } = await completion(agents.honest!);
    const receipt = body.svc_receipt;
    const seed = Buffer.from(attestedKey(agents.honest!), "hex");
    const verdict = verifyReceipt(receipt, { signingKey: Signer.fromSeed(seed).publicKey, providerId: agents.honest!.providerId, trustLevel: "process", content: body.choices[0]!.message.content });
    expect(verdict.problems).toEqual([]);
    expect(body.usage).toEqual({ ...receipt.usage, prompt_tokens_details: { cached_tokens: 0 } });
    expect(body.choices[0]!.finish_reason).toBe(receipt.finish_reason);
    expect(receipt).toMatchObject({ version: 3, cached_tokens: 0, model_id: "qwen3-4b", model_sha256: cluster.tiny.catalog.models.find((m) => m.alias === "qwen3-4b")!.sha256, client_nonce: null });
    expect(receipt).not.toHaveProperty("serial");
  });

  it("at the hardware rung it carries the serial the listing discloses", async () => {
    const { body } = await completion(agents.hardware!);
    const listed = (await listProviders(gateway)).find((p) => p.id === agents.hardware!.providerId);
    expect(listed?.serial).toBeTruthy();
    expect(body.svc_receipt).toMatchObject({ trust_level: "hardware", serial: listed!.serial });
    expect(verifyReceipt(body.svc_receipt, { content: body.choices[0]!.message.content }).problems).toEqual([]);
  });
});

describe("x-svc-receipt-nonce", () => {
  it("appears as client_nonce in the signed payload", async () => {
    const nonce = "fresh-Nonce_0123456789abcdef";
    const { body } = await completion(agents.honest!, { "x-svc-receipt-nonce": nonce });
    expect(body.svc_receipt.client_nonce).toBe(nonce);
    expect(verifyReceipt(body.svc_receipt, { clientNonce: nonce, providerId: agents.honest!.providerId }).valid).toBe(true);
  });

  it("a malformed nonce → 400 fix_request naming the header, before any provider is used", async () => {
    // the last is what a repeated header arrives as
    const bad = ["short", "x".repeat(65), "has spaces in it 0123", "plus+slash/0123456789", "\u00e9".repeat(20), "first-nonce-0123456, second-nonce-012345"];
    const sessions = () => agents.honest!.stdout().match(/session \S+ start/g)?.length ?? 0;
    const before = sessions();
    for (const nonce of bad) {
      const res = await chat(agents.honest!, {}, { "x-svc-receipt-nonce": nonce });
      await expectApiError(res, 400, { code: "invalid_value", param: "x-svc-receipt-nonce", svc_action: "fix_request" });
    }
    expect(sessions()).toBe(before);
  });
});

describe("DESIGN §5: the gateway verifies before it answers", () => {
  const rejected = async (agent: AgentProcess, why: RegExp) => {
    const res = await chat(agent);
    const body = await expectApiError(res, 502, { code: "receipt_invalid", svc_action: "retry", type: "api_error" });
    expect(body.error.message).toContain(agent.providerId);
    expect(body.error.message).toMatch(why);
    expect(JSON.stringify(body)).not.toContain("svc_receipt");
    const line = await gateway.waitForLog((l) => l.provider === agent.providerId && String(l.msg).includes("receipt"));
    expect(line).toMatchObject({ level: 40, msg: `receipt from provider ${agent.providerId} rejected` });
  };

  it("a tampered field → 502 receipt_invalid, retry, and a log line naming the provider", async () => {
    await rejected(agents.tamper!, /signature does not verify/);
  });

  it("a swapped signing key → 502 receipt_invalid", async () => {
    await rejected(agents["swap-key"]!, /provider_id is not the SHA-256 of the signing key; the signing key is [0-9a-f]{64}, expected/);
  });

  it("a wrong response hash → 502 receipt_invalid", async () => {
    await rejected(agents["response-hash"]!, /response_sha256/);
  });

  it("a receipt replayed on another request, and one from another provider → 502 receipt_invalid", async () => {
    const replaying = agents.replay!;
    // until the file exists this agent is honest: its first receipt is good, then it replays it
    const first = await completion(replaying);
    writeFileSync(replayFile, JSON.stringify(first.body.svc_receipt));
    await rejected(replaying, /request_sha256 .*gateway_nonce/);
    const theirs = await completion(agents.honest!);
    writeFileSync(replayFile, JSON.stringify(theirs.body.svc_receipt));
    await rejected(replaying, /the signing key is [0-9a-f]{64}, expected .*provider_id is/);
  });

  it("on a stream: the error in a data line after the deltas, no [DONE], never the receipt", async () => {
    const res = await chat(agents.tamper!, { stream: true });
    expect(res.status).toBe(200);
    const { raw, data: events } = await readSse(res);
    expect(events.length).toBeGreaterThan(2);
    expect(JSON.parse(events.at(-1)!)).toMatchObject({ error: { code: "receipt_invalid", svc_action: "retry" } });
    expect(raw).not.toContain("[DONE]");
    expect(raw).not.toContain("svc_receipt");
  });

  it("after a refused receipt every provider is free again", async () => {
    // the listing follows the coordinator's feed, which hears the session's end a moment after the caller does
    await expect.poll(async () => (await listProviders(gateway)).filter((p) => p.busy || p.waiting > 0).map((p) => p.id), { timeout: 10_000 }).toEqual([]);
  });
});

describe("svc-agent verify FILE", () => {
  const saved = (name: string, text: string) => {
    const path = join(cluster.tiny.dir, name);
    writeFileSync(path, text);
    return path;
  };
  const verify = (path: string, ...args: string[]): Promise<CliResult> => runCli("svc-agent", ["verify", path, ...args]);
  const honestKey = () => Signer.fromSeed(Buffer.from(attestedKey(agents.honest!), "hex")).publicKey;

  it("a saved body, a receipt alone and an SSE transcript with a trusted key verify: VALID, exit 0", async () => {
    const nonce = "verify-me_0123456789";
    const { text, body } = await completion(agents.honest!, { "x-svc-receipt-nonce": nonce });
    // the three files' checks are independent: their commands run side by side
    const [ok, alone, sse] = await Promise.all([
      verify(saved("body.json", text), "--nonce", nonce, "--provider-key", honestKey(), "--providers", gateway.url, "--api-key", gateway.key),
      verify(saved("receipt.json", JSON.stringify(body.svc_receipt)), "--key", honestKey()),
      // the hardware rung and serial the gateway lists are the ones the receipt claims
      chat(agents.hardware!, { stream: true }).then(async (res) => verify(saved("stream.sse", await res.text()), "--providers", gateway.url, "--api-key", gateway.key)),
    ]);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^.*body\.json: a chat completion response\n/);
    expect(ok.stdout).toContain(`provider ${agents.honest!.providerId} is listed by ${gateway.url}/v1/providers at rung process`);
    expect(ok.stdout).toContain(`VALID: receipt ${body.svc_receipt.id} signed by provider ${agents.honest!.providerId} at rung process for qwen3-4b`);

    expect(alone.code).toBe(0);
    expect(alone.stdout).toContain("response_sha256 not recomputed: the file holds no content");

    expect(sse.code, sse.stdout).toBe(0);
    expect(sse.stdout).toContain("an SSE transcript");
    expect(sse.stdout).toMatch(/ok {4}serial is \S+/);
  });

  it("the same files with nothing to trust the key by: UNVERIFIED, exit 2", async () => {
    const { text } = await completion(agents.honest!);
    const bare = await verify(saved("bare.json", text));
    expect(bare.code, bare.stdout).toBe(2);
    expect(bare.stdout.trimEnd().split("\n").at(-1)).toBe("UNVERIFIED: signature and hashes hold, but nothing ties the key to a provider you trust");
  });

  it("each doctored file is INVALID, exit 1: tampered field, swapped key, another provider's, replayed, wrong response hash", async () => {
    const nonce = "first-request_0123456789";
    // the hardware provider answers while the honest one answers its two
    const [[one, two], hw] = await Promise.all([
      completion(agents.honest!, { "x-svc-receipt-nonce": nonce }).then(async (first) => [first, await completion(agents.honest!, { "x-svc-receipt-nonce": "second-request_0123456789" })] as const),
      completion(agents.hardware!),
    ]);
    const withReceipt = (b: Completion, receipt: unknown) => JSON.stringify({ ...b, svc_receipt: receipt });
    const r = one.body.svc_receipt;
    const cases: [string, string, string[], RegExp][] = [
      ["tampered.json", withReceipt(one.body, { ...r, model_id: "qwen3-8b" }), [], /FAIL {2}the signature does not verify/],
      ["swapped.json", withReceipt(one.body, signReceipt(Signer.fromSeed(Buffer.alloc(32, 5)), payloadOf(r))), ["--provider-key", honestKey()], /FAIL {2}provider_id is not the SHA-256 of the signing key/],
      ["other-provider.json", withReceipt(one.body, hw.body.svc_receipt), ["--provider-key", honestKey()], /FAIL {2}the signing key is [0-9a-f]{64}, expected/],
      ["replayed.json", withReceipt(two.body, r), ["--nonce", "second-request_0123456789"], /FAIL {2}client_nonce is first-request_0123456789, expected second-request_0123456789/],
      ["wrong-hash.json", JSON.stringify({ ...one.body, choices: [{ ...one.body.choices[0]!, message: { role: "assistant", content: "a different answer" } }] }), [], /FAIL {2}response_sha256/],
      ["index.json", JSON.stringify({ ...one.body, choices: [{ ...one.body.choices[0]!, index: 1 }] }), [], /FAIL {2}the response is not in the gateway's shape: choices\[0\]\.index/],
      ["parts.json", JSON.stringify({ ...one.body, choices: [{ ...one.body.choices[0]!, message: { role: "assistant", content: [{ type: "text", text: "a different answer" }] } }] }), [], /FAIL {2}the response is not in the gateway's shape: choices\[0\]\.message\.content/],
    ];
    const results = await Promise.all(cases.map(([name, text, args]) => verify(saved(name, text), ...args)));
    for (const [i, [name, , , why]] of cases.entries()) {
      const result = results[i]!;
      expect(result.code, `${name}: ${result.stdout}${result.stderr}`).toBe(1);
      expect(result.stdout, name).toMatch(why);
      expect(result.stdout, name).toMatch(/\nINVALID: /);
    }
  });

  it("a provider the listing does not have, an unreadable file and an error body are refusals with a reason", async () => {
    const { body } = await completion(agents.honest!);
    // well formed and self-consistent, but signed by a machine this directory has never attested
    const stranger = Signer.fromSeed(Buffer.alloc(32, 6));
    const unlisted = signReceipt(stranger, { ...payloadOf(body.svc_receipt), provider_id: providerIdOf(stranger.publicKey) });
    const path = saved("unlisted.json", JSON.stringify(unlisted));
    // four independent commands, side by side
    const [notListed, wrongKey, missing, error] = await Promise.all([
      verify(path, "--providers", `${gateway.url}/v1`, "--api-key", gateway.key),
      verify(path, "--providers", gateway.url, "--api-key", "sk-svc_wrong"),
      verify(join(cluster.tiny.dir, "nope.json")),
      verify(saved("error.json", JSON.stringify({ error: { code: "receipt_invalid", message: "no" } }))),
    ]);
    expect(notListed.code).toBe(1);
    expect(notListed.stdout).toContain(`FAIL  provider ${providerIdOf(stranger.publicKey)} is not listed by ${gateway.url}/v1/providers`);
    // could not check at all: exit 3, never read as a verdict
    expect(wrongKey.code).toBe(3);
    expect(wrongKey.stderr).toContain(`${gateway.url}/v1/providers answered 401 (pass --api-key or set SVC_API_KEY)`);
    expect([missing.code, missing.stderr]).toEqual([3, expect.stringContaining("cannot read")]);
    expect([error.code, error.stdout]).toEqual([1, expect.stringContaining("INVALID: the file holds an error response, which carries no receipt")]);
  });
});

describe("verifyReceipt, exported from the package", () => {
  it("index.d.ts declares what the implementation takes and returns (checked by tsc in both directions)", () => {
    const declared: [typeof PackageEntry.verifyReceipt, typeof PackageEntry.verifySavedResponse, typeof PackageEntry.readSavedResponse] =
      [verifyReceipt, verifySavedResponse, readSavedResponse];
    const implemented: [typeof verifyReceipt, typeof verifySavedResponse, typeof readSavedResponse] = declared;
    expect(implemented).toEqual([verifyReceipt, verifySavedResponse, readSavedResponse]);
  });

  it("plain node imports it from the package and checks a saved response", async () => {
    const { text } = await completion(agents.honest!);
    const script = `import { verifySavedResponse } from "svc-agent"; const v = verifySavedResponse(process.argv[1], { providerId: process.argv[2] }); console.log(JSON.stringify([v.status, v.valid, v.problems]));`;
    const run = await runNode(["--input-type=module", "-e", script, text, agents.honest!.providerId], { cwd: new URL("../..", import.meta.url) });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual(["valid", true, []]);
  });
});
