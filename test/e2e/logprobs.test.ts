// Issue 43 item 1: logprobs as OpenAI shapes them, through the official openai SDK against a real gateway and agent
// on the tiny model: chat (`logprobs`, `top_logprobs`), legacy completions (`logprobs` as an integer) and Responses
// (`include: ["message.output_text.logprobs"]`, `top_logprobs`), JSON and stream, each covered by a v4 receipt that
// every verifier reads (the package's export here, `svc-agent verify` below) and that a changed logprob breaks.
import OpenAI from "openai";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../harness/cli.ts";
import { verifySavedResponse } from "../../src/receipt/index.ts";
import { tokenString, type TokenLogprob } from "../../src/receipt/logprobs.ts";
import type { Receipt } from "../../src/receipt/receipt.ts";
import { openaiGateway, post, type GatewayProcess } from "../fixtures/gateway.ts";

let gw: GatewayProcess;
let client: OpenAI;
beforeAll(async () => ({ gw, client } = await openaiGateway({ aliases: [{ alias: "qwen3-4b", seed: 1, thinkTags: true }] })));
afterAll(() => gw.stop());

// a fresh prompt each time (no prompt-cache hit), so two requests read the very same logits
const messages = [{ role: "user" as const, content: "Tell me about lighthouses." }];
const fresh = { cache_prompt: false } as Record<string, unknown>;
const receiptOf = (value: unknown) => (value as { svc_receipt: Receipt }).svc_receipt;
const trusted = () => ({ providerId: gw.providerId });
type Entry = TokenLogprob;

/** Each entry as OpenAI's and llama-server's fields, its token string its bytes'. */
function expectEntries(entries: readonly Entry[], top: number): void {
  for (const entry of entries) {
    expect(Object.keys(entry).sort()).toEqual(["bytes", "id", "logprob", "token", "top_logprobs"]);
    expect(entry.token).toBe(tokenString(entry.bytes));
    expect(entry.logprob).toBeLessThanOrEqual(0);
    expect(entry.top_logprobs).toHaveLength(top);
    expect(entry.top_logprobs.map((alt) => alt.logprob)).toEqual([...entry.top_logprobs.map((alt) => alt.logprob)].sort((a, b) => b - a));
  }
}

describe("chat completions: logprobs true, top_logprobs 0–20", () => {
  it("JSON: one entry per completion token in choices[0].logprobs.content, under a v4 receipt; a changed logprob is INVALID", async () => {
    const res = await client.chat.completions.create({ model: "qwen3-4b", messages, max_tokens: 12, temperature: 0.9, seed: 4, logprobs: true, top_logprobs: 3, ...fresh });
    const entries = res.choices[0]!.logprobs!.content! as unknown as Entry[];
    expect(entries).toHaveLength(res.usage!.completion_tokens);
    expectEntries(entries, 3);
    expect(res.choices[0]!.logprobs!.refusal).toBeNull();
    // the tokens' strings join to the raw text the model wrote (here, with no think block apart, the content)
    expect(entries.map((e) => e.token).join("")).toBe(res.choices[0]!.message.content);
    expect(receiptOf(res).version).toBe(4);
    expect(verifySavedResponse(JSON.stringify(res), trusted())).toMatchObject({ status: "valid", problems: [] });
    const edited = structuredClone(res);
    (edited.choices[0]!.logprobs!.content![2]! as { logprob: number }).logprob -= 0.5;
    expect(verifySavedResponse(JSON.stringify(edited), trusted()).problems).toEqual([expect.stringMatching(/^logprobs_sha256 \(SHA-256 of every token.s logprobs\) is [0-9a-f]{64}, expected [0-9a-f]{64}$/)]);
  });

  it("stream: each chunk's logprobs ride with its delta and join to the JSON answer's; finalChatCompletion() verifies", async () => {
    const body = { model: "qwen3-4b", messages, max_tokens: 10, temperature: 0, logprobs: true, top_logprobs: 2, ...fresh };
    const whole = await client.chat.completions.create(body);
    const stream = client.chat.completions.stream(body);
    const streamed: Entry[] = [];
    let chunks = 0;
    for await (const chunk of stream) {
      const entries = chunk.choices[0]?.logprobs?.content as unknown as Entry[] | undefined;
      if (entries !== undefined) streamed.push(...entries);
      if (chunk.choices[0]?.delta.content) chunks++;
    }
    // greedy on the same logits: the same tokens, the same values
    expect(streamed).toEqual(whole.choices[0]!.logprobs!.content);
    expect(chunks).toBeGreaterThan(0);
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]!.logprobs!.content).toEqual(streamed);
    expect(verifySavedResponse(JSON.stringify(final), trusted())).toMatchObject({ status: "valid", problems: [] });
  });

  it("asking for none: no logprobs field and a v3 receipt, as before", async () => {
    const res = await client.chat.completions.create({ model: "qwen3-4b", messages, max_tokens: 4 });
    expect(res.choices[0]).not.toHaveProperty("logprobs");
    expect(receiptOf(res).version).toBe(3);
  });

  it("with reasoning apart, the entries still cover every token, the think block's included", async () => {
    const res = await client.chat.completions.create({ model: "qwen3-4b", messages, max_tokens: 30, temperature: 1, seed: 2, logprobs: true, reasoning_format: "parsed", ...fresh } as never as OpenAI.ChatCompletionCreateParamsNonStreaming);
    const entries = res.choices[0]!.logprobs!.content!;
    expect(entries).toHaveLength(res.usage!.completion_tokens);
    expect(verifySavedResponse(JSON.stringify(res), trusted()).status).toBe("valid");
  });
});

describe("legacy completions: logprobs as an integer (0–5)", () => {
  it("JSON: OpenAI's tokens, token_logprobs, top_logprobs and text_offset, with llama-server's content list the receipt covers", async () => {
    const res = await client.completions.create({ model: "qwen3-4b", prompt: "Once upon a time", max_tokens: 8, temperature: 1, seed: 3, logprobs: 2, ...fresh });
    const logprobs = res.choices[0]!.logprobs as OpenAI.Completions.CompletionChoice.Logprobs & { content: Entry[] };
    expect(logprobs.tokens).toHaveLength(8);
    expect(logprobs.tokens!.join("")).toBe(res.choices[0]!.text);
    expect(logprobs.token_logprobs).toEqual(logprobs.content.map((e) => e.logprob));
    expect(logprobs.top_logprobs!.map((top) => Object.keys(top).length)).toEqual(logprobs.content.map((e) => new Set(e.top_logprobs.map((a) => a.token)).size));
    expect(logprobs.text_offset).toEqual(logprobs.tokens!.map((_, i) => logprobs.tokens!.slice(0, i).join("").length));
    expectEntries(logprobs.content, 2);
    expect(verifySavedResponse(JSON.stringify(res), trusted())).toMatchObject({ status: "valid", problems: [] });
    const edited = structuredClone(res);
    (edited.choices[0]!.logprobs as { token_logprobs: number[] }).token_logprobs[1]! -= 1;
    expect(verifySavedResponse(JSON.stringify(edited), trusted()).status).toBe("invalid");
  });

  it("stream: each event's logprobs for its text, offsets counted across the stream", async () => {
    const body = { model: "qwen3-4b", prompt: "abc", max_tokens: 6, temperature: 0, logprobs: 1, ...fresh };
    const whole = await client.completions.create(body);
    const stream = await client.completions.create({ ...body, stream: true });
    const offsets: number[] = [];
    const content: Entry[] = [];
    for await (const chunk of stream) {
      const logprobs = chunk.choices[0]?.logprobs as (OpenAI.Completions.CompletionChoice.Logprobs & { content: Entry[] }) | null | undefined;
      if (logprobs == null) continue;
      offsets.push(...logprobs.text_offset!);
      content.push(...logprobs.content);
    }
    const wholeLogprobs = whole.choices[0]!.logprobs as { text_offset: number[]; content: Entry[] };
    expect(content).toEqual(wholeLogprobs.content);
    expect(offsets).toEqual(wholeLogprobs.text_offset);
  });
});

describe("Responses: include message.output_text.logprobs, top_logprobs", () => {
  it("JSON: output_text.logprobs are the entries of the tokens before its text (the think block's are not the message's)", async () => {
    const res = await client.responses.create({
      model: "qwen3-4b", input: "Tell me about lighthouses.", max_output_tokens: 30, temperature: 1, seed: 4, include: ["message.output_text.logprobs"], top_logprobs: 2, ...fresh,
    } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    const message = res.output.find((item) => item.type === "message")!;
    const part = message.content[0] as OpenAI.Responses.ResponseOutputText;
    const entries = part.logprobs as unknown as Entry[];
    expect(entries.length).toBeGreaterThan(0);
    // a seed whose answer thinks first: the think block's tokens are counted, and are not the message's entries
    expect(res.output.some((item) => item.type === "reasoning")).toBe(true);
    expect(entries.length).toBeLessThan(res.usage!.output_tokens);
    expectEntries(entries, 2);
    expect(receiptOf(res).version).toBe(4);
    expect(verifySavedResponse(JSON.stringify(res), trusted())).toMatchObject({ status: "valid", problems: [] });
    const edited = structuredClone(res) as unknown as { output: { type: string; content?: [{ logprobs: Entry[] }] }[] };
    edited.output.find((item) => item.type === "message")!.content![0].logprobs[0]!.top_logprobs[1]!.logprob -= 0.25;
    expect(verifySavedResponse(JSON.stringify(edited), trusted()).problems).toEqual([expect.stringMatching(/^content_logprobs_sha256 \(SHA-256 of the content.s logprobs\) is [0-9a-f]{64}, expected [0-9a-f]{64}$/)]);
  });

  it("stream: output_text.delta events carry the logprobs; the final response verifies, and top_logprobs alone asks for nothing", async () => {
    const stream = client.responses.stream({ model: "qwen3-4b", input: "Hi", max_output_tokens: 20, temperature: 0, include: ["message.output_text.logprobs"], ...fresh } as never);
    const fromDeltas: Entry[] = [];
    for await (const event of stream) if (event.type === "response.output_text.delta") fromDeltas.push(...(event.logprobs as unknown as Entry[]));
    const final = await stream.finalResponse();
    const joined = final.output.flatMap((item) => (item.type === "message" ? ((item.content[0] as OpenAI.Responses.ResponseOutputText).logprobs as unknown as Entry[]) : []));
    expect(joined).toEqual(fromDeltas);
    expect(verifySavedResponse(JSON.stringify(final), trusted()).status).toBe("valid");
    const none = await client.responses.create({ model: "qwen3-4b", input: "Hi", max_output_tokens: 4, top_logprobs: 5 });
    expect(receiptOf(none).version).toBe(3);
  });
});

describe("faults: 400s naming the field, before any provider is used", () => {
  const cases: [string, string, Record<string, unknown>, string, string][] = [
    ["top_logprobs without logprobs", "/v1/chat/completions", { messages, top_logprobs: 2 }, "invalid_value", "top_logprobs"],
    ["top_logprobs 21", "/v1/chat/completions", { messages, logprobs: true, top_logprobs: 21 }, "invalid_value", "top_logprobs"],
    ["more entries than an answer carries", "/v1/chat/completions", { messages, logprobs: true, top_logprobs: 20, max_tokens: 4000 }, "invalid_value", "max_tokens"],
    ["legacy logprobs 6", "/v1/completions", { prompt: "a", logprobs: 6 }, "invalid_value", "logprobs"],
    ["another include", "/v1/responses", { input: "x", include: ["reasoning.encrypted_content"] }, "unsupported_parameter", "include"],
    ["Responses' length bound by its own name", "/v1/responses", { input: "x", include: ["message.output_text.logprobs"], top_logprobs: 20, max_output_tokens: 4000 }, "invalid_value", "max_output_tokens"],
  ];
  for (const [what, path, body, code, param] of cases) {
    it(what, async () => {
      const res = await post(gw, path, { model: "qwen3-4b", ...body });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: unknown }).error).toMatchObject({ code, param, svc_action: "fix_request" });
    });
  }
});

describe("svc-agent verify reads saved answers with logprobs", () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-logprobs-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const verify = (path: string) => runCli("svc-agent", ["verify", path, "--providers", gw.url, "--api-key", gw.key]);
  const save = async (name: string, path: string, body: Record<string, unknown>) => {
    const res = await post(gw, path, { model: "qwen3-4b", ...fresh, ...body });
    expect(res.status).toBe(200);
    writeFileSync(join(dir, name), await res.text());
    return join(dir, name);
  };

  it("chat, legacy and Responses, bodies and streams, are VALID; a logprob changed in a stream is INVALID", async () => {
    const chat = { messages, max_tokens: 6, logprobs: true, top_logprobs: 2 };
    const legacy = { prompt: "Once", max_tokens: 6, logprobs: 2 };
    const responses = { input: "Hi", max_output_tokens: 20, include: ["message.output_text.logprobs"], top_logprobs: 1 };
    const files = [
      await save("chat.json", "/v1/chat/completions", chat),
      await save("chat.sse", "/v1/chat/completions", { ...chat, stream: true }),
      await save("legacy.json", "/v1/completions", legacy),
      await save("legacy.sse", "/v1/completions", { ...legacy, stream: true }),
      await save("responses.json", "/v1/responses", responses),
      await save("responses.sse", "/v1/responses", { ...responses, stream: true }),
    ];
    const { readFileSync } = await import("node:fs");
    const sse = readFileSync(files[1]!, "utf8").replace(/"logprob":(-[0-9.e-]+)/, (_, n: string) => `"logprob":${Number(n) - 1}`);
    writeFileSync(join(dir, "chat-edited.sse"), sse);
    // each file's verifier is its own process: they run side by side
    const [results, result] = await Promise.all([Promise.all(files.map(verify)), verify(join(dir, "chat-edited.sse"))]);
    for (const [i, path] of files.entries()) {
      expect(results[i]!.code, `${path}: ${results[i]!.stdout}${results[i]!.stderr}`).toBe(0);
      expect(results[i]!.stdout.trimEnd().split("\n").at(-1)).toMatch(/^VALID/);
    }
    expect(result.code, result.stdout).toBe(1);
    expect(result.stdout).toMatch(/FAIL .*logprobs_sha256/);
  });
});
