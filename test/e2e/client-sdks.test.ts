// DESIGN §10 gateway-blind requests through the SDKs callers use (issue 42 item 5): the Vercel AI SDK (@ai-sdk/openai,
// Responses and chat) and the OpenAI Agents SDK, each unchanged but for `fetch: createSealedFetch(...)`, through a real
// gateway, coordinator and agent on the tiny model. Each runs the normal path first, then the sealed one: every POST
// that left the caller was application/svc-sealed+json without the prompt, and the SDK's result is the normal path's
// (ids, times and the prompt cache's count aside). Grammars force the calls and the JSON on the random-weight model.
import { createOpenAI } from "@ai-sdk/openai";
import { Agent, OpenAIProvider, run, Runner, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled, tool as agentTool, type AgentInputItem } from "@openai/agents";
import { embed, generateObject, generateText, stepCountIs, streamText, tool, type LanguageModel } from "ai";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import { sealedFetch, startBlindGateway, type BlindGateway, type Sent } from "../fixtures/blind-gateway.ts";
import { startRelayProxy, type RelayProxy } from "../fixtures/relay-proxy.ts";

let bg: BlindGateway;
/** A hostile gateway in front of the real one, which cuts each sealed stream before its final frame. */
let cutting: RelayProxy;
beforeAll(async () => {
  bg = await startBlindGateway();
  cutting = await startRelayProxy(bg.gw.url);
  cutting.rewrite = (line) => (line.startsWith("F ") ? [] : [line]);
}, 120_000);
afterAll(async () => {
  await cutting?.close();
  await bg?.gw.stop();
});
const CUT = "svc sealed fetch: the relayed answer was cut before its final frame; the answer is refused";

// strings kept short, so that a random model's answer fits its token budget
const City = z.object({ city: z.string().max(12) });
const Person = z.object({ name: z.string().max(10), admin: z.boolean() });
const WEATHER = "What is the weather in Paris?";

/** What left the caller: only sealed POSTs, none holding `prompt`, all to the gateway. */
function expectSealed(sent: Sent[], prompt: string): void {
  const posts = sent.filter((s) => s.method === "POST");
  expect(posts.length).toBeGreaterThan(0);
  for (const post of posts) {
    expect(post.type).toBe("application/svc-sealed+json");
    expect(post.body).not.toContain(prompt);
  }
  for (const s of sent) expect(s.url.startsWith(`${bg.gw.url}/v1/`), s.url).toBe(true);
}

/**
 * A value with what differs per request masked: ids, times, receipts, and the prompt cache's count (the second of two
 * same prompts reads the first one's: one key, one scope); the gateway's own step timings (x_svc_timing) exist only
 * where it shapes the answer, so they are dropped.
 */
const VARIES = new Set(["id", "toolCallId", "itemId", "item_id", "response_id", "responseId", "callId", "call_id", "created", "created_at", "timestamp", "svc_receipt", "cached_tokens", "cachedInputTokens", "cacheReadTokens", "noCacheTokens", "requestId", "headers", "providerMetadata", "usage"]);
const masked = (value: unknown): unknown => JSON.parse(JSON.stringify(value ?? null, (key, v: unknown) => (key === "x_svc_timing" ? undefined : VARIES.has(key) ? "~" : v))) as unknown;

describe("DESIGN §10 Gateway-blind: the Vercel AI SDK (@ai-sdk/openai) works unchanged with fetch: createSealedFetch", () => {
  const normal = () => createOpenAI({ baseURL: bg.gw.baseURL, apiKey: bg.gw.key });
  const sealed = () => {
    const { fetch, sent } = sealedFetch(bg);
    return { provider: createOpenAI({ baseURL: bg.gw.baseURL, apiKey: bg.gw.key, fetch }), sent };
  };
  const routes = [
    { name: "Responses (the default)", model: (p: ReturnType<typeof createOpenAI>): LanguageModel => p("qwen3-4b") },
    { name: "chat", model: (p: ReturnType<typeof createOpenAI>): LanguageModel => p.chat("qwen3-4b") },
  ];

  for (const route of routes) {
    describe(route.name, () => {
      it("generateText with a tool loop: a forced call, the tool's result sent back, then an answer in text", async () => {
        const loop = (model: LanguageModel) =>
          generateText({
            model, prompt: WEATHER, maxOutputTokens: 100, temperature: 0, seed: 2, maxRetries: 0,
            tools: { get_weather: tool({ description: "Weather for a city", inputSchema: City, execute: async ({ city }) => `18C in ${city}` }) },
            // a forced call first, then no tools: the model must answer from the result
            prepareStep: ({ stepNumber }) => (stepNumber === 0 ? { toolChoice: "required" } : { toolChoice: "none" }),
            stopWhen: stepCountIs(2),
            // the whole history travels each step (svc keeps no responses to refer to)
            providerOptions: { openai: { parallelToolCalls: false, store: false } },
          });
        const steps = (result: Awaited<ReturnType<typeof loop>>) =>
          result.steps.map((s) => ({ finishReason: s.finishReason, calls: s.toolCalls.map((c) => [c.toolName, c.input]), results: s.toolResults.map((r) => r.output), text: s.text }));
        const plain = await loop(route.model(normal()));
        const { provider, sent } = sealed();
        const blind = await loop(route.model(provider));
        expect(steps(blind)).toEqual(steps(plain));
        expect(blind.steps).toHaveLength(2);
        expect(blind.steps[0]!.toolCalls.map((c) => c.toolName)).toEqual(["get_weather"]);
        expect(blind.steps[1]!.toolCalls).toEqual([]);
        expectSealed(sent, WEATHER);
        expect(sent.filter((s) => s.method === "POST")).toHaveLength(2);
      });

      it("streamText: the same parts in the same order, and the same text", async () => {
        const prompt = "Tell me a story.";
        const parts = async (model: LanguageModel) => {
          const result = streamText({ model, prompt, maxOutputTokens: 12, temperature: 0, seed: 3, maxRetries: 0 });
          const all: unknown[] = [];
          for await (const part of result.fullStream) all.push(part);
          return { parts: masked(all) as { type: string }[], text: await result.text };
        };
        const plain = await parts(route.model(normal()));
        const { provider, sent } = sealed();
        const blind = await parts(route.model(provider));
        expect(blind.parts.map((p) => p.type)).toContain("text-delta");
        expect(blind).toEqual(plain);
        expectSealed(sent, prompt);
      });

      it("generateObject: the same object, which the SDK validated against the zod schema", async () => {
        const prompt = "A person.";
        const object = async (model: LanguageModel) => (await generateObject({ model, schema: Person, prompt, maxOutputTokens: 60, temperature: 0, seed: 4, maxRetries: 0 })).object;
        const plain = await object(route.model(normal()));
        const { provider, sent } = sealed();
        const blind = await object(route.model(provider));
        expect(Person.parse(blind)).toEqual(blind);
        expect(blind).toEqual(plain);
        expectSealed(sent, prompt);
      });
    });
  }

  it("embed: the same vector", async () => {
    const value = "svc sealed embedding";
    const plain = await embed({ model: normal().embedding("tiny-embed"), value, maxRetries: 0 });
    const { provider, sent } = sealed();
    const blind = await embed({ model: provider.embedding("tiny-embed"), value, maxRetries: 0 });
    expect(blind.embedding.length).toBeGreaterThan(0);
    expect(blind.embedding).toEqual(plain.embedding);
    expectSealed(sent, value);
  });

  it("a refusal reaches the SDK as an APICallError whose message names the reason; nothing is sent", async () => {
    const { fetch, sent } = sealedFetch(bg, { floor: "hardware" });
    const provider = createOpenAI({ baseURL: bg.gw.baseURL, apiKey: bg.gw.key, fetch });
    // the AI SDK retries a 5xx whatever x-should-retry says, and would then report a RetryError around this one
    const error = await generateText({ model: provider("qwen3-4b"), prompt: "Hi", maxOutputTokens: 4, maxRetries: 0 }).catch((err: unknown) => err);
    expect(error).toMatchObject({
      name: "AI_APICallError", statusCode: 503,
      message: `svc sealed fetch: no provider of qwen3-4b passed the caller's checks (${bg.gw.providerId.slice(0, 12)}: its evidence proves process, below the floor hardware); nothing was sent`,
    });
    expect(sent.filter((s) => s.method === "POST")).toEqual([]);
  });

  it("a stream a gateway cuts after its head: streamText's stream throws, wrapping the client's error that names the cut", async () => {
    const { fetch } = sealedFetch(bg, { baseURL: cutting.baseURL });
    const provider = createOpenAI({ baseURL: cutting.baseURL, apiKey: bg.gw.key, fetch });
    const result = streamText({ model: provider.chat("qwen3-4b"), prompt: "Hi", maxOutputTokens: 8, temperature: 0, maxRetries: 0 });
    const parts: { type: string; error?: unknown }[] = [];
    const thrown = await (async () => {
      for await (const part of result.fullStream) parts.push(part);
    })().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(parts.map((p) => p.type)).toContain("text-delta");
    // the AI SDK wraps whatever breaks a body it is reading: the client's error is the cause
    expect(thrown).toMatchObject({ name: "AI_APICallError", message: "Failed to process successful response", cause: { status: 502, code: "sealed_answer_invalid", message: CUT } });
  });
});

describe("DESIGN §10 Gateway-blind: the OpenAI Agents SDK works unchanged with a sealed default client", () => {
  const weather = agentTool({ name: "get_weather", description: "Weather for a city", parameters: City, execute: async ({ city }) => `18C in ${city}` });
  const agent = new Agent({
    name: "forecaster", instructions: "Answer briefly.", model: "qwen3-4b", tools: [weather],
    // a forced call first; the SDK then resets the choice (resetToolChoice), so the next turn answers in text
    modelSettings: { toolChoice: "required", parallelToolCalls: false, temperature: 0, maxTokens: 100 },
  });
  let sent: Sent[];
  beforeAll(() => {
    // the app's own set-up, as the Agents SDK documents it: one default client, here the sealed one
    setTracingDisabled(true);
    const sealed = sealedFetch(bg);
    sent = sealed.sent;
    setDefaultOpenAIClient(new OpenAI({ baseURL: bg.gw.baseURL, apiKey: bg.gw.key, maxRetries: 0, fetch: sealed.fetch }));
  });
  /** The normal path, for comparison: the same agent on a plain client of its own. */
  const plainRunner = (useResponses: boolean) =>
    new Runner({ modelProvider: new OpenAIProvider({ openAIClient: new OpenAI({ baseURL: bg.gw.baseURL, apiKey: bg.gw.key, maxRetries: 0 }), useResponses }), tracingDisabled: true });
  /** A run's items as the app reads them, ids aside. */
  const items = (list: readonly { type: string; rawItem?: unknown }[]) => masked(list.map((item) => ({ type: item.type, raw: item.rawItem })));

  for (const api of ["chat_completions", "responses"] as const) {
    describe(api, () => {
      beforeAll(() => setOpenAIAPI(api));

      it("run with a tool: the call, its result and the final answer are the normal path's", async () => {
        const before = sent.length;
        const plain = await plainRunner(api === "responses").run(agent, WEATHER, { maxTurns: 3 });
        const blind = await run(agent, WEATHER, { maxTurns: 3 });
        expect(blind.newItems.map((i) => i.type)).toEqual(["tool_call_item", "tool_call_output_item", "message_output_item"]);
        expect(items(blind.newItems)).toEqual(items(plain.newItems));
        expect(blind.finalOutput).toBe(plain.finalOutput);
        expectSealed(sent.slice(before), WEATHER);
      });

      it("run with stream: true: the same events in the same order, and the same final output", async () => {
        const events = async (stream: AsyncIterable<{ type: string; name?: string; data?: unknown; item?: { type: string; rawItem?: unknown } }> & { completed: Promise<void>; finalOutput?: unknown }) => {
          const all: unknown[] = [];
          for await (const event of stream) all.push(event.type === "raw_model_stream_event" ? { type: event.type, data: event.data } : { type: event.type, name: event.name, item: event.item === undefined ? undefined : { type: event.item.type, raw: event.item.rawItem } });
          await stream.completed;
          return { events: masked(all) as { type: string }[], output: stream.finalOutput };
        };
        const before = sent.length;
        const plain = await events(await plainRunner(api === "responses").run(agent, WEATHER, { maxTurns: 3, stream: true }));
        const blind = await events(await run(agent, WEATHER, { maxTurns: 3, stream: true }));
        expect(blind.events.length).toBeGreaterThan(3);
        expect(blind).toEqual(plain);
        expectSealed(sent.slice(before), WEATHER);
      });
    });
  }

  it("a refusal reaches the run as the SDK's APIError whose message names the reason; nothing is sent", async () => {
    const { fetch, sent: refusedSent } = sealedFetch(bg, { floor: "hardware" });
    // the SDK's client retries as shipped (twice): a refusal says x-should-retry: false, so it asks once
    const runner = new Runner({ modelProvider: new OpenAIProvider({ openAIClient: new OpenAI({ baseURL: bg.gw.baseURL, apiKey: bg.gw.key, fetch }), useResponses: true }), tracingDisabled: true });
    const input: AgentInputItem[] = [{ role: "user", content: "Hi" }];
    const error = await runner.run(agent, input, { maxTurns: 1 }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error).toMatchObject({ status: 503, code: "provider_unavailable", message: expect.stringContaining("its evidence proves process, below the floor hardware); nothing was sent") });
    expect(refusedSent.filter((s) => s.method === "POST")).toEqual([]);
    expect(refusedSent.filter((s) => s.url.endsWith("/v1/providers"))).toHaveLength(1);
  });

  it("a stream a gateway cuts after its head: the streamed run fails with the client's error, naming the cut", async () => {
    const { fetch } = sealedFetch(bg, { baseURL: cutting.baseURL });
    const runner = new Runner({ modelProvider: new OpenAIProvider({ openAIClient: new OpenAI({ baseURL: cutting.baseURL, apiKey: bg.gw.key, fetch }), useResponses: false }), tracingDisabled: true });
    const stream = await runner.run(agent, WEATHER, { maxTurns: 3, stream: true });
    const types: string[] = [];
    const error = await (async () => {
      for await (const event of stream) types.push(event.type);
      await stream.completed;
    })().then(
      () => new Error("expected the run to fail"),
      (err: unknown) => err,
    );
    expect(types).toContain("raw_model_stream_event");
    expect(error).toMatchObject({ status: 502, code: "sealed_answer_invalid", message: CUT });
  });
});
