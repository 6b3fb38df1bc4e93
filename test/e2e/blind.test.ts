// DESIGN §10 gateway-blind requests end to end (issue 42): the official openai SDK, unchanged but for
// `fetch: createSealedFetch(...)`, through a real gateway, coordinator and agent on a tiny model. The gateway relays
// only sealed, padded frames and never holds the prompt; a hostile gateway (a proxy that rewrites the relay) is caught.
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyReceipt } from "../../client/index.ts";
import { fromBase64url, PAD_BYTES } from "../../src/blind/format.ts";
import { sealedFetch, startBlindGateway, type BlindGateway } from "../fixtures/blind-gateway.ts";
import { startAgent, waitForProvider, type AgentProcess, type GatewayProcess } from "../fixtures/gateway.ts";
import { memoryHolds } from "../fixtures/process-memory.ts";
import { startRelayProxy, type RelayProxy } from "../fixtures/relay-proxy.ts";

let bg: BlindGateway;
let gw: GatewayProcess;
let proxy: RelayProxy;

beforeAll(async () => {
  bg = await startBlindGateway();
  gw = bg.gw;
  proxy = await startRelayProxy(gw.url);
}, 120_000);
afterAll(async () => {
  await proxy?.close();
  await gw?.stop();
});

const normal = () => new OpenAI({ baseURL: gw.baseURL, apiKey: gw.key, maxRetries: 0 });
/** The SDK as a caller switches it to blind mode: one option more. */
const blind = (baseURL = gw.baseURL) => new OpenAI({ baseURL, apiKey: gw.key, maxRetries: 0, fetch: sealedFetch(bg, { baseURL }).fetch });
const ask = (content: string) => ({ model: "qwen3-4b", messages: [{ role: "user" as const, content }], max_tokens: 8, temperature: 0 });

async function collect(stream: AsyncIterable<OpenAI.ChatCompletionChunk>): Promise<OpenAI.ChatCompletionChunk[]> {
  const chunks: OpenAI.ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

describe("DESIGN §10 Gateway-blind: the openai SDK works unchanged with fetch: createSealedFetch", () => {
  it("create: the same answer as the normal path, in the same shape, with a receipt for the provider that answered", async () => {
    const plain = await normal().chat.completions.create(ask("Say hi"));
    const { data: sealed, response } = await blind().chat.completions.create(ask("Say hi")).withResponse();
    expect(Object.keys(sealed).sort()).toEqual(Object.keys(plain).sort());
    expect(sealed.choices).toEqual(plain.choices);
    // the same key's prompt cache served the sealed request: the scope the gateway sent beside it is the caller's
    expect(sealed.usage).toEqual({ ...plain.usage, prompt_tokens_details: { cached_tokens: expect.any(Number) } });
    expect(sealed.usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThan(0);
    expect(response.headers.get("x-svc-provider")).toBe(gw.providerId);
    const receipt = (sealed as unknown as { svc_receipt: { provider_id: string } }).svc_receipt;
    expect(receipt.provider_id).toBe(gw.providerId);
    expect(verifyReceipt(receipt, { content: sealed.choices[0]!.message.content! }).problems).toEqual([]);
  });

  it("stream: the same chunks as the normal path, the receipt in the last, then the stream ends", async () => {
    const plain = await collect(await normal().chat.completions.create({ ...ask("Count"), stream: true }));
    const sealed = await collect(await blind().chat.completions.create({ ...ask("Count"), stream: true }));
    const text = (chunks: OpenAI.ChatCompletionChunk[]) => chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    expect(text(sealed)).toBe(text(plain));
    expect(sealed.length).toBe(plain.length);
    expect(sealed.map((c) => Object.keys(c).sort())).toEqual(plain.map((c) => Object.keys(c).filter((k) => k !== "x_svc_timing").sort()));
    expect(sealed.at(-1)).toHaveProperty("svc_receipt.provider_id", gw.providerId);
  });
});

describe("DESIGN §10 Gateway-blind: a tool loop with the openai SDK", () => {
  it("the call and the answer to its result are the normal path's", async () => {
    const tools = [{ type: "function" as const, function: { name: "weather", parameters: { type: "object", properties: { city: { type: "string", enum: ["Paris", "Oslo"] } }, required: ["city"], additionalProperties: false } } }];
    const turn = (client: OpenAI) => client.chat.completions.create({ ...ask("Weather in Paris?"), max_tokens: 200, seed: 7, tools, tool_choice: "required", parallel_tool_calls: false });
    const [plain, sealed] = [await turn(normal()), await turn(blind())];
    const call = (c: OpenAI.ChatCompletion) => c.choices[0]!.message.tool_calls!.map((t) => (t.type === "function" ? t.function : undefined));
    expect(call(sealed)).toEqual(call(plain));
    expect([sealed, plain].map((c) => c.choices[0]!.finish_reason)).toEqual(["tool_calls", "tool_calls"]);
    const answer = (client: OpenAI, first: OpenAI.ChatCompletion) =>
      client.chat.completions.create({
        ...ask("Weather in Paris?"),
        messages: [{ role: "user", content: "Weather in Paris?" }, first.choices[0]!.message, { role: "tool", tool_call_id: first.choices[0]!.message.tool_calls![0]!.id, content: "Sunny, 21 C" }],
        tools,
      });
    const [plainAnswer, sealedAnswer] = [await answer(normal(), plain), await answer(blind(), sealed)];
    expect(sealedAnswer.choices[0]!.message.content).toBe(plainAnswer.choices[0]!.message.content);
  });
});

describe("DESIGN §10 Gateway-blind: the other routes fall out of the one layer", () => {
  it("Responses and legacy completions answer blind what they answer normally", async () => {
    const input = { model: "qwen3-4b", input: "Say hi", max_output_tokens: 8, temperature: 0 };
    const [plain, sealed] = [await normal().responses.create(input), await blind().responses.create(input)];
    expect(sealed.output_text).toBe(plain.output_text);
    expect(Object.keys(sealed).sort()).toEqual(Object.keys(plain).sort());
    const legacy = { model: "qwen3-4b", prompt: "Once upon", max_tokens: 6, temperature: 0 };
    const [plainText, sealedText] = [await normal().completions.create(legacy), await blind().completions.create(legacy)];
    expect(sealedText.choices).toEqual(plainText.choices);
  });

  it("Responses and legacy completions stream blind the events they stream normally, ids and times aside", async () => {
    const events = async <T>(stream: AsyncIterable<T>) => {
      const all: unknown[] = [];
      for await (const event of stream) all.push(event);
      // ids, times and the receipt differ per request, and the second of two same prompts reads the first one's
      // prompt cache (one key, one scope); the gateway's own step timings (x_svc_timing) exist only where it shapes
      // the answer, as in the chat stream above; the event sequence and text must not differ
      const varies = ["id", "item_id", "created", "created_at", "svc_receipt", "response_id", "cached_tokens"];
      return JSON.parse(JSON.stringify(all, (key, value: unknown) => (key === "x_svc_timing" ? undefined : varies.includes(key) ? "~" : value))) as unknown[];
    };
    const input = { model: "qwen3-4b", input: "Say hi", max_output_tokens: 8, temperature: 0, stream: true as const };
    const [plain, sealed] = [await events(await normal().responses.create(input)), await events(await blind().responses.create(input))];
    expect(sealed.length).toBeGreaterThan(2);
    expect(sealed).toEqual(plain);
    const legacy = { model: "qwen3-4b", prompt: "Once upon", max_tokens: 6, temperature: 0, stream: true as const };
    const [plainText, sealedText] = [await events(await normal().completions.create(legacy)), await events(await blind().completions.create(legacy))];
    expect(sealedText.length).toBeGreaterThan(1);
    expect(sealedText).toEqual(plainText);
  });

  it("embeddings answer blind the vectors they answer normally", async () => {
    const request = { model: "tiny-embed", input: ["svc", "sealed"] };
    const [plain, sealed] = [await normal().embeddings.create(request), await blind().embeddings.create(request)];
    expect(sealed.data).toEqual(plain.data);
    expect(sealed.data).toHaveLength(2);
  });
});

describe("Issue 43 complete requests: the blind client completes every request it seals", () => {
  const versionOf = (answer: unknown) => (answer as { svc_receipt: { version: number } }).svc_receipt.version;

  it("top_logprobs sealed whether asked or not: every receipt is v4 (it commits to every token's logprob), shown only to a caller who asked", async () => {
    const unasked = await blind().chat.completions.create(ask("Say hi"));
    expect(unasked.choices[0]).not.toHaveProperty("logprobs");
    expect(versionOf(unasked)).toBe(4);
    const asked = await blind().chat.completions.create({ ...ask("Say hi"), logprobs: true, top_logprobs: 2 });
    expect(asked.choices[0]!.logprobs!.content).toHaveLength(asked.usage!.completion_tokens);
    expect(asked.choices[0]!.logprobs!.content![0]!.top_logprobs).toHaveLength(2);
    const responses = await blind().responses.create({ model: "qwen3-4b", input: "Say hi", max_output_tokens: 8, temperature: 0 });
    const legacy = await blind().completions.create({ model: "qwen3-4b", prompt: "Once upon", max_tokens: 6, temperature: 0 });
    expect([responses, legacy].map(versionOf)).toEqual([4, 4]);
    expect(legacy.choices[0]!.logprobs ?? null).toBeNull();
  });
});

describe("DESIGN §10 Gateway-blind: the gateway reads only the envelope, after the key and limits", () => {
  /** A sealed body posted as is; with `key` "" no Authorization header. */
  const sealedPost = (body: string, key = gw.key) =>
    fetch(`${gw.url}/v1/chat/completions`, { method: "POST", headers: { ...(key === "" ? {} : { authorization: `Bearer ${key}` }), "content-type": "application/svc-sealed+json" }, body });

  it("no key is 401, a broken envelope 400 naming the field, an envelope for another route 400 on kind: ordinary envelopes", async () => {
    expect((await sealedPost("{}", "")).status).toBe(401);
    const broken = await sealedPost(JSON.stringify({ v: 1, kind: "chat" }));
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as { error: { param: string } }).error.param).toBe("alias");
    const envelope = { v: 1, kind: "embeddings", alias: "qwen3-4b", stream: false, max_tokens: 1, request_sha256: "0".repeat(64), candidates: [{ provider: gw.providerId, enc: "AA", key: "AA" }], ct: "AA" };
    const wrongRoute = await sealedPost(JSON.stringify(envelope));
    expect(wrongRoute.status).toBe(400);
    expect(((await wrongRoute.json()) as { error: { param: string } }).error.param).toBe("kind");
  });

  it("a request that opens for none of its candidates is the caller's 400 sealed_request_invalid, after the head", async () => {
    const envelope = { v: 1, kind: "chat", alias: "qwen3-4b", stream: false, max_tokens: 4, request_sha256: "0".repeat(64), candidates: [{ provider: gw.providerId, enc: "A".repeat(43), key: "A".repeat(64) }], ct: "A".repeat(700) };
    const res = await sealedPost(JSON.stringify(envelope));
    expect(res.status).toBe(200);
    const lines = (await res.text()).split("\n").filter((l) => l !== "" && l !== "k");
    expect(lines[0]).toBe(`p ${gw.providerId}`);
    expect(JSON.parse(lines.at(-1)!.slice(2))).toMatchObject({ error: { code: "sealed_request_invalid", type: "invalid_request_error" } });
  });

  it("usage is billed from the receipt beside the last frame: the request's log line counts its tokens", async () => {
    const { response } = await blind().chat.completions.create(ask("Bill me")).withResponse();
    const id = response.headers.get("x-request-id");
    const line = () => gw.stdout().split("\n").find((l) => l.includes('"msg":"request"') && l.includes(`"id":"${id}"`));
    await expect.poll(line).toBeDefined();
    const logged = JSON.parse(line()!) as Record<string, unknown>;
    expect(logged).toMatchObject({ status: 200, provider: gw.providerId, stream: false, completion_tokens: 8 });
    expect(logged.prompt_tokens).toBeGreaterThan(0);
  });
});

describe("DESIGN §10 Gateway-blind: the gateway relays only sealed, padded frames and never holds the prompt", () => {
  it("a whole answer (stream: false) leaves the gateway in one write: the head, the candidate's line, what follows it and the end", async () => {
    // an envelope that opens at no candidate: the candidate takes it, then refuses it, so the answer is p then e
    const body = JSON.stringify({ v: 1, kind: "chat", alias: "qwen3-4b", stream: false, max_tokens: 4, request_sha256: "0".repeat(64), candidates: [{ provider: gw.providerId, enc: "A".repeat(43), key: "A".repeat(64) }], ct: "A".repeat(700) });
    const { hostname, port } = new URL(gw.url);
    const socket = connect(Number(port), hostname);
    const reads: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => reads.push(chunk));
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: ${hostname}\r\nauthorization: Bearer ${gw.key}\r\ncontent-type: application/svc-sealed+json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    await once(socket, "end");
    const text = Buffer.concat(reads).toString();
    expect(text).toMatch(/^HTTP\/1\.1 200 /);
    expect(text).toContain(`\r\np ${gw.providerId}\n`);
    expect(text).toContain('e {"error":{');
    expect(text.endsWith("0\r\n\r\n")).toBe(true);
    // one segment on loopback: the provider's line did not go out alone at placement
    expect(reads).toHaveLength(1);
  });

  it("every frame the gateway relays is a multiple of 512 bytes plus the tag, the last one marked final", async () => {
    const before = proxy.answers.length;
    await collect(await blind(proxy.baseURL).chat.completions.create({ ...ask("Tell me more"), stream: true }));
    const lines = proxy.answers[before]!;
    const frames = lines.filter((l) => /^[fF] /.test(l));
    expect(lines[0]).toBe(`p ${gw.providerId}`);
    expect(frames.length).toBeGreaterThan(1);
    for (const frame of frames) expect((fromBase64url(frame.slice(2)).length - 16) % PAD_BYTES).toBe(0);
    expect(frames.map((f) => f[0])).toEqual([...frames.slice(1).map(() => "f"), "F"]);
  });

  it("a canary prompt sent blind is absent from the gateway's memory, logs and data dir, and present in the agent's (the control)", async () => {
    const canary = `canary-${randomBytes(12).toString("hex")}`;
    await blind().chat.completions.create(ask(`Repeat ${canary}`));
    expect(gw.stdout() + gw.stderr()).not.toContain(canary);
    for (const file of filesUnder(join(gw.tiny.dir, "gateway"))) expect(readFileSync(file).includes(canary), file).toBe(false);
    expect(memoryHolds(gw.child.pid!, canary)).toBe(false);
    expect(memoryHolds(gw.agents[0]!.child.pid!, canary)).toBe(true);
    // and the search finds what the gateway does hold: a canary sent the normal way
    const plain = `canary-${randomBytes(12).toString("hex")}`;
    await normal().chat.completions.create(ask(`Repeat ${plain}`));
    expect(memoryHolds(gw.child.pid!, plain)).toBe(true);
  });
});

describe("DESIGN §10 Gateway-blind: the client catches a hostile gateway, each with a clear error", () => {
  /**
   * Runs `call` through the proxy with `rewrite` on the relayed lines, on an SDK that retries as shipped (twice):
   * what it threw, and how many sealed requests reached the gateway.
   */
  async function through(rewrite: RelayProxy["rewrite"], call: (client: OpenAI) => Promise<unknown>): Promise<{ error: unknown; sent: number }> {
    proxy.rewrite = rewrite;
    const before = proxy.answers.length;
    try {
      const retrying = new OpenAI({ baseURL: proxy.baseURL, apiKey: gw.key, fetch: sealedFetch(bg, { baseURL: proxy.baseURL }).fetch });
      const error = await call(retrying).then(
        () => new Error("expected the call to fail"),
        (err: unknown) => err,
      );
      return { error, sent: proxy.answers.length - before };
    } finally {
      proxy.rewrite = (line) => [line];
    }
  }
  /** The SDK's error for a refused answer: 502 sealed_answer_invalid, its message the client's reason, not retried. */
  const refused = (reason: RegExp) => ({ status: 502, code: "sealed_answer_invalid", type: "api_error", message: expect.stringMatching(reason) });

  it("a tampered frame does not open: 502 sealed_answer_invalid, not retried", async () => {
    const flip = (line: string) => (/^[fF] /.test(line) ? [`${line.slice(0, 10)}${line[10] === "A" ? "B" : "A"}${line.slice(11)}`] : [line]);
    const { error, sent } = await through(flip, (c) => c.chat.completions.create(ask("Hi")));
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect(error).toMatchObject(refused(/^502 svc sealed fetch: an answer frame does not open: tampered.*; the answer is refused$/));
    expect(sent).toBe(1);
  });

  it("a provider outside the candidates is refused: 502 sealed_answer_invalid naming it, not retried", async () => {
    const swap = (line: string) => (line.startsWith("p ") ? [`p ${"ab".repeat(32)}`] : [line]);
    const { error, sent } = await through(swap, (c) => c.chat.completions.create(ask("Hi")));
    expect(error).toMatchObject(refused(/^502 svc sealed fetch: the gateway relayed an answer from provider (ab){32}, which is not one of the request's candidates; the answer is refused$/));
    expect(sent).toBe(1);
  });

  it("an old answer replayed onto a new request does not open: 502 sealed_answer_invalid, not retried", async () => {
    const before = proxy.answers.length;
    await blind(proxy.baseURL).chat.completions.create(ask("First"));
    const old = proxy.answers[before]!;
    const replay = (line: string, i: number) => (i === 0 ? old : []);
    const { error, sent } = await through(replay, (c) => c.chat.completions.create(ask("Second")));
    expect(error).toMatchObject(refused(/^502 svc sealed fetch: an answer frame does not open: .*; the answer is refused$/));
    expect(sent).toBe(1);
  });

  it("a stream cut before its final frame: the SDK's iteration throws the client's error, after the text that opened", async () => {
    const cut = (line: string) => (line.startsWith("F ") ? [] : [line]);
    const seen: OpenAI.ChatCompletionChunk[] = [];
    const { error, sent } = await through(cut, async (c) => {
      for await (const chunk of await c.chat.completions.create({ ...ask("Hi"), stream: true })) seen.push(chunk);
    });
    // the head went out before the cut was seen, so the error is the stream's, not a status: the same envelope fields
    expect(error).toMatchObject({ status: 502, code: "sealed_answer_invalid", message: "svc sealed fetch: the relayed answer was cut before its final frame; the answer is refused" });
    expect(seen[0]!.choices[0]!.delta.role).toBe("assistant");
    expect(sent).toBe(1);
  });

  it("a provider listed at a higher rung than its evidence proves is never chosen: 503 provider_unavailable naming it, nothing sent", async () => {
    proxy.listing = (providers) => providers.map((p) => ({ ...p, trust: "transparent" }));
    try {
      const { error, sent } = await through((line) => [line], (c) => c.chat.completions.create(ask("Hi")));
      expect(error).toMatchObject({
        status: 503, code: "provider_unavailable",
        message: expect.stringMatching(new RegExp(`^503 svc sealed fetch: no provider of qwen3-4b passed the caller's checks \\(${gw.providerId.slice(0, 12)}: listed at transparent, but its evidence proves process.*\\); nothing was sent$`)),
      });
      expect(sent).toBe(0);
    } finally {
      proxy.listing = (providers) => providers;
    }
  });
});

describe("DESIGN §10 Gateway-blind: a provider's false receipt or own error is caught where it can be seen", () => {
  let padding: AgentProcess;
  let misquoting: AgentProcess;
  let failing: AgentProcess;
  beforeAll(async () => {
    // started last, so no earlier test's candidates include them; each request below pins one
    [padding, misquoting, failing] = await Promise.all([
      startAgent(gw.coordinatorUrl, gw.tiny, { args: ["--test-fault", "receipt=tamper"] }),
      startAgent(gw.coordinatorUrl, gw.tiny, { args: ["--test-fault", "receipt=response-hash"] }),
      startAgent(gw.coordinatorUrl, gw.tiny, { args: ["--test-fault", "error=provider_error"] }),
    ]);
    for (const agent of [padding, misquoting, failing]) await waitForProvider(gw, agent.providerId);
  }, 120_000);
  afterAll(async () => {
    await Promise.all([padding?.stop(), misquoting?.stop(), failing?.stop()]);
  });
  const pinned = (agent: AgentProcess) =>
    new OpenAI({ baseURL: gw.baseURL, apiKey: gw.key, maxRetries: 0, fetch: sealedFetch(bg, { provider: agent.providerId }).fetch });

  it("a receipt whose usage was raised after signing: the gateway refuses it (it bills by it), charges the provider, and the caller gets 502 receipt_invalid", async () => {
    const error = await pinned(padding).chat.completions.create(ask("Hi")).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error).toMatchObject({ status: 502, code: "receipt_invalid" });
    await expect.poll(() => gw.stdout()).toContain(`provider ${padding.providerId} fault: it sent a receipt that does not verify`);
  });

  it("an error of the provider's own: the gateway reads only its code, charges the provider, and the caller gets 502 provider_error", async () => {
    const error = await pinned(failing).chat.completions.create(ask("Hi")).catch((err: unknown) => err);
    expect(error).toMatchObject({ status: 502, code: "provider_error" });
    await expect.poll(() => gw.stdout()).toContain(`provider ${failing.providerId} fault: it reported an error of its own (provider_error)`);
  });

  it("a receipt signed over another answer: the gateway cannot see the answer and relays it; the client refuses it, 502 sealed_answer_invalid", async () => {
    const error = await pinned(misquoting).chat.completions.create(ask("Hi")).catch((err: unknown) => err);
    expect(error).toMatchObject({ status: 502, code: "sealed_answer_invalid", message: expect.stringMatching(new RegExp(`^502 svc sealed fetch: the receipt from provider ${misquoting.providerId} did not verify \\(response_sha256.*; the answer is refused$`)) });
  });
});

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}
