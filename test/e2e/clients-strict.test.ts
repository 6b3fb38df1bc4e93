// Strict structured output as the SDKs send it, on chat and on Responses: each framework's strict helper (and the
// openai SDK's strict zodFunction and zodResponsesFunction tools), unchanged, on one zod schema with an int, an email,
// a uuid, a date-time, optional and nullable fields, nested arrays and enums, against a real gateway and agent on the
// tiny model. zod writes ±(2^53 − 1) bounds
// for the int and a format plus zod's own pattern for the strings; svc's grammar enforces them (docs/api.md, Formats
// and bounds) and each SDK parses the answer.
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ChatOpenAI } from "@langchain/openai";
import { OpenAI as LlamaIndexOpenAI } from "@llamaindex/openai";
import { generateObject } from "ai";
import OpenAI from "openai";
import { zodFunction, zodResponseFormat, zodResponsesFunction, zodTextFormat } from "openai/helpers/zod";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { startGateway, type GatewayProcess } from "../fixtures/gateway.ts";

let gw: GatewayProcess;
beforeAll(async () => {
  gw = await startGateway({ aliases: [{ alias: "qwen3-4b", seed: 1 }] });
});
afterAll(() => gw.stop());

// strings and arrays bounded, so that a random model's answer fits in max_tokens
const Line = z.object({ sku: z.enum(["book", "pen", "ink"]), qty: z.number().int().min(1).max(9), tags: z.array(z.enum(["gift", "rush"])).max(2) });
const Order = z.object({
  id: z.number().int(),
  email: z.email(),
  ref: z.uuid(),
  placed: z.iso.datetime(),
  // OpenAI's strict mode (and the openai SDK) wants every property required: optional fields are also nullable
  note: z.string().max(12).optional().nullable(),
  owner: z.string().max(12).nullable(),
  lines: z.array(Line).max(2),
  grid: z.array(z.array(z.number().int().min(-5).max(99)).max(2)).max(2),
});
// the frameworks that allow it also get a field that is only optional
const LooseOrder = Order.extend({ nick: z.string().max(8).optional() });
const prompt = "An order as JSON.";

/**
 * Each SDK's own fetch, recording the request bodies: so the test sees that it sent strict mode and zod's keywords.
 * `extra` fields join each body after it is recorded, for what an SDK cannot send.
 */
function recorder(extra: Body = {}) {
  const bodies: Body[] = [];
  const fetcher = async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
    if (typeof init?.body !== "string") return fetch(input, init);
    const body = JSON.parse(init.body) as Body;
    bodies.push(body);
    return fetch(input, { ...init, body: JSON.stringify({ ...body, ...extra }) });
  };
  return { fetch: fetcher as typeof fetch, bodies };
}
type Body = Record<string, unknown>;
type StrictSchema = { strict?: boolean; schema?: { properties: Record<string, unknown> }; parameters?: { properties: Record<string, unknown> } };
/** The schema was sent strict, holding zod's int bounds, email format and pattern (as `schema`, or a tool's `parameters`). */
function expectStrictZodIn(sent: StrictSchema | undefined): void {
  expect(sent?.strict).toBe(true);
  const { properties } = (sent!.schema ?? sent!.parameters)!;
  expect(properties.id).toMatchObject({ type: "integer", minimum: -9007199254740991, maximum: 9007199254740991 });
  expect(properties.email).toMatchObject({ type: "string", format: "email", pattern: expect.any(String) });
}
/** The last request sent strict json_schema output on chat: response_format. */
function expectStrictZod(bodies: Body[]): void {
  const format = bodies.at(-1)?.response_format as { type: string; json_schema: StrictSchema };
  expect(format.type).toBe("json_schema");
  expectStrictZodIn(format.json_schema);
}
/** The last request sent strict json_schema output on Responses: text.format. */
function expectStrictZodText(bodies: Body[]): void {
  const format = (bodies.at(-1)?.text as { format: StrictSchema & { type: string } }).format;
  expect(format.type).toBe("json_schema");
  expectStrictZodIn(format);
}
const MAX_TOKENS = 1500;

describe("the openai SDK: zodResponseFormat and chat.completions.parse", () => {
  it("message.parsed is the order, which the SDK checked with zod; three seeds", async () => {
    const { fetch, bodies } = recorder();
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.key, maxRetries: 0, fetch });
    const format = zodResponseFormat(Order, "order");
    expect(format.json_schema.strict).toBe(true);
    for (const seed of [1, 2, 3]) {
      const data = await client.chat.completions.parse({ model: "qwen3-4b", messages: [{ role: "user", content: prompt }], max_tokens: MAX_TOKENS, temperature: 1, seed, response_format: format });
      const parsed = data.choices[0]!.message.parsed;
      expect(parsed, `seed ${seed}`).not.toBeNull();
      expect(Order.parse(parsed)).toEqual(parsed);
    }
    expectStrictZod(bodies);
  });
});

describe("the openai SDK: a strict zodFunction tool", () => {
  it("parsed_arguments is the order, which the SDK checked with zod", async () => {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.key, maxRetries: 0 });
    const tool = zodFunction({ name: "place_order", parameters: Order });
    expect(tool.function.strict).toBe(true);
    const data = await client.chat.completions.parse({
      model: "qwen3-4b", messages: [{ role: "user", content: prompt }], max_tokens: MAX_TOKENS, temperature: 1, seed: 7, tools: [tool], tool_choice: "required", parallel_tool_calls: false,
    });
    const [call] = data.choices[0]!.message.tool_calls!;
    const args = call!.type === "function" ? call!.function.parsed_arguments : undefined;
    expect(Order.parse(args)).toEqual(args);
  });
});

describe("Vercel AI SDK: generateObject (strict JSON schema through @ai-sdk/openai-compatible)", () => {
  it("an object the SDK validated against the zod schema", async () => {
    const { fetch, bodies } = recorder();
    const svc = createOpenAICompatible({ name: "svc", baseURL: gw.baseURL, apiKey: gw.key, supportsStructuredOutputs: true, fetch });
    const { object } = await generateObject({
      // the provider sends strict: true unless told otherwise (strictJsonSchema)
      model: svc("qwen3-4b"), schema: LooseOrder, prompt, maxOutputTokens: MAX_TOKENS, temperature: 1, seed: 4, maxRetries: 0,
    });
    expect(LooseOrder.parse(object)).toEqual(object);
    expectStrictZod(bodies);
  });
});

describe("LangChain: withStructuredOutput, strict", () => {
  it("jsonSchema method with strict: true gives an object matching the zod schema", async () => {
    const { fetch, bodies } = recorder();
    const chat = new ChatOpenAI({ model: "qwen3-4b", apiKey: gw.key, configuration: { baseURL: gw.baseURL, fetch }, temperature: 1, maxTokens: MAX_TOKENS, modelKwargs: { seed: 5 }, maxRetries: 0 });
    const order = await chat.withStructuredOutput(LooseOrder, { method: "jsonSchema", strict: true }).invoke(prompt);
    expect(LooseOrder.parse(order)).toEqual(order);
    expectStrictZod(bodies);
  });
});

describe("LlamaIndex: @llamaindex/openai chat with a zod responseFormat (strict)", () => {
  it("the message content parses as the order", async () => {
    const { fetch, bodies } = recorder();
    const llm = new LlamaIndexOpenAI({
      model: "qwen3-4b", apiKey: gw.key, baseURL: gw.baseURL, temperature: 1, maxTokens: MAX_TOKENS, additionalChatOptions: { seed: 6 }, maxRetries: 0, additionalSessionOptions: { fetch },
    });
    const response = await llm.chat({ messages: [{ role: "user", content: prompt }], responseFormat: LooseOrder });
    const order = JSON.parse(response.message.content as string);
    expect(LooseOrder.parse(order)).toEqual(order);
    expectStrictZod(bodies);
  });
});

describe("Responses: the openai SDK's zodTextFormat and responses.parse", () => {
  it("output_parsed is the order, which the SDK checked with zod; three seeds", async () => {
    const { fetch, bodies } = recorder();
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.key, maxRetries: 0, fetch });
    const format = zodTextFormat(Order, "order");
    expect(format.strict).toBe(true);
    for (const seed of [1, 2, 3]) {
      const response = await client.responses.parse({
        model: "qwen3-4b", input: prompt, max_output_tokens: MAX_TOKENS, temperature: 1, text: { format }, ...{ seed },
      });
      expect(response.status, `seed ${seed}`).toBe("completed");
      expect(response.output_parsed, `seed ${seed}`).not.toBeNull();
      expect(Order.parse(response.output_parsed)).toEqual(response.output_parsed);
    }
    expectStrictZodText(bodies);
  });
});

describe("Responses: the openai SDK's strict zodResponsesFunction tool", () => {
  it("the function_call's parsed_arguments is the order, which the SDK checked with zod", async () => {
    const { fetch, bodies } = recorder();
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.key, maxRetries: 0, fetch });
    const tool = zodResponsesFunction({ name: "place_order", parameters: Order });
    expect(tool.strict).toBe(true);
    const response = await client.responses.parse({
      model: "qwen3-4b", input: prompt, max_output_tokens: MAX_TOKENS, temperature: 1, tools: [tool], tool_choice: "required", parallel_tool_calls: false, ...{ seed: 7 },
    });
    const calls = response.output.filter((item) => item.type === "function_call");
    expect(calls.map((call) => call.name)).toEqual(["place_order"]);
    const args = calls[0]!.parsed_arguments;
    expect(Order.parse(args)).toEqual(args);
    expectStrictZodIn((bodies.at(-1)!.tools as StrictSchema[])[0]);
  });
});

describe("Responses: Vercel AI SDK generateObject through the default @ai-sdk/openai provider", () => {
  it("an object the SDK validated against the zod schema, sent as strict text.format", async () => {
    // @ai-sdk/openai sends no seed on Responses (it warns that OpenAI has none): a fresh seed each run
    const { fetch, bodies } = recorder();
    const openai = createOpenAI({ baseURL: gw.baseURL, apiKey: gw.key, fetch });
    // otherwise the provider's defaults: one call has no earlier items to send by reference, so no `store: false` is
    // needed; strict: true unless told otherwise (strictJsonSchema)
    const { object } = await generateObject({ model: openai("qwen3-4b"), schema: LooseOrder, prompt, maxOutputTokens: MAX_TOKENS, temperature: 1, maxRetries: 0 });
    expect(LooseOrder.parse(object)).toEqual(object);
    expect(bodies.at(-1)).not.toHaveProperty("store");
    expectStrictZodText(bodies);
  });
});
