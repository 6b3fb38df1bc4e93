// Issue 43 item 2, complete requests: a gateway run with `--audit` seals top_logprobs and a seed on every chat,
// Responses and legacy request, so every receipt (v4) commits to every token's logprob, which the gateway checks; a
// caller who asked for none sees none, and what it saves verifies: `svc-agent verify` says "committed, not shown".
import OpenAI from "openai";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../harness/cli.ts";
import { verifySavedResponse } from "../../src/receipt/index.ts";
import type { Receipt } from "../../src/receipt/receipt.ts";
import { openaiGateway, post, type GatewayProcess } from "../fixtures/gateway.ts";

let gw: GatewayProcess;
let client: OpenAI;
beforeAll(async () => ({ gw, client } = await openaiGateway({ aliases: [{ alias: "qwen3-4b", seed: 1 }], args: ["--audit"] })));
afterAll(() => gw.stop());

const messages = [{ role: "user" as const, content: "Tell me about lighthouses." }];
const receiptOf = (value: unknown) => (value as { svc_receipt: Receipt }).svc_receipt;
const trusted = () => ({ providerId: gw.providerId });
const NOT_SHOWN = /^logprobs committed, not shown/;

describe("svc-gateway serve --audit: every request complete", () => {
  it("a chat answer without logprobs asked shows none, under a v4 receipt that commits to them; it verifies VALID, committed, not shown", async () => {
    const res = await client.chat.completions.create({ model: "qwen3-4b", messages, max_tokens: 8 });
    expect(res.choices[0]).not.toHaveProperty("logprobs");
    expect(receiptOf(res).version).toBe(4);
    const verdict = verifySavedResponse(JSON.stringify(res), trusted());
    expect(verdict).toMatchObject({ status: "valid", problems: [] });
    expect(verdict.checks.filter((c) => c.check === "logprobs").map((c) => c.detail)).toEqual([expect.stringMatching(NOT_SHOWN)]);
  });

  it("a stream without logprobs asked: no chunk carries them; finalChatCompletion() verifies", async () => {
    const stream = client.chat.completions.stream({ model: "qwen3-4b", messages, max_tokens: 8 });
    for await (const chunk of stream) expect(chunk.choices[0]?.logprobs ?? null).toBeNull();
    const final = await stream.finalChatCompletion();
    expect(receiptOf(final).version).toBe(4);
    expect(verifySavedResponse(JSON.stringify(final), trusted())).toMatchObject({ status: "valid", problems: [] });
  });

  it("a caller who asks gets them as without --audit: every token's, covered by the same kind of receipt", async () => {
    const res = await client.chat.completions.create({ model: "qwen3-4b", messages, max_tokens: 8, logprobs: true, top_logprobs: 2 });
    expect(res.choices[0]!.logprobs!.content).toHaveLength(res.usage!.completion_tokens);
    expect(res.choices[0]!.logprobs!.content![0]!.top_logprobs).toHaveLength(2);
    const verdict = verifySavedResponse(JSON.stringify(res), trusted());
    expect(verdict).toMatchObject({ status: "valid", problems: [] });
    expect(verdict.checks.some((c) => NOT_SHOWN.test(c.detail))).toBe(false);
  });
});

describe("svc-agent verify on what callers without logprobs saved", () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-complete-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const save = async (name: string, path: string, body: Record<string, unknown>) => {
    const res = await post(gw, path, { model: "qwen3-4b", ...body });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).not.toContain('"logprob"');
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };

  it("chat, legacy and Responses, bodies and streams: VALID, each saying the logprobs are committed, not shown", async () => {
    const files = [
      await save("chat.json", "/v1/chat/completions", { messages, max_tokens: 6 }),
      await save("chat.sse", "/v1/chat/completions", { messages, max_tokens: 6, stream: true }),
      await save("legacy.json", "/v1/completions", { prompt: "Once", max_tokens: 6 }),
      await save("legacy.sse", "/v1/completions", { prompt: "Once", max_tokens: 6, stream: true }),
      await save("responses.json", "/v1/responses", { input: "Hi", max_output_tokens: 20 }),
      await save("responses.sse", "/v1/responses", { input: "Hi", max_output_tokens: 20, stream: true }),
    ];
    for (const path of files) {
      const result = await runCli("svc-agent", ["verify", path, "--providers", gw.url, "--api-key", gw.key]);
      expect(result.code, `${path}: ${result.stdout}${result.stderr}`).toBe(0);
      expect(result.stdout, path).toMatch(/ok {4}logprobs committed, not shown/);
      expect(result.stdout.trimEnd().split("\n").at(-1)).toMatch(/^VALID/);
    }
  });
});
