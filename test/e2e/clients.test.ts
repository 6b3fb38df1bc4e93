// Agent frameworks as their users run them, unchanged, against a real gateway and agent on the tiny model: the
// openai SDK's parse helpers, the Vercel AI SDK (`generateText` with tools, `generateObject`) through @ai-sdk/openai-compatible, and LangChain's
// ChatOpenAI (`bindTools`, `withStructuredOutput`). Grammars force the calls and the JSON; the frameworks parse them.
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { AIMessage } from "@langchain/core/messages";
import { tool as langchainTool } from "@langchain/core/tools";
import { ChatOpenAI } from "@langchain/openai";
import { generateObject, generateText, jsonSchema, tool } from "ai";
import OpenAI from "openai";
import { zodFunction, zodResponseFormat } from "openai/helpers/zod";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { startGateway, type GatewayProcess } from "../fixtures/gateway.ts";

let gw: GatewayProcess;
beforeAll(async () => {
  gw = await startGateway({ aliases: [{ alias: "qwen3-4b", seed: 1 }] });
});
afterAll(() => gw.stop());

// strings kept short, so that a random model's answer fits in max_tokens
const City = z.object({ city: z.string().max(12).describe("the city") });
const Person = z.object({ name: z.string().max(10), admin: z.boolean(), pets: z.array(z.string().max(5)).max(2) });

describe("the openai SDK's parse helpers (zodResponseFormat, zodFunction)", () => {
  const client = () => new OpenAI({ baseURL: gw.baseURL, apiKey: gw.key, maxRetries: 0 });

  it("chat.completions.parse with zodResponseFormat: message.parsed is the object, checked by the SDK", async () => {
    const data = await client().chat.completions.parse({
      model: "qwen3-4b", messages: [{ role: "user", content: "A person." }], max_tokens: 200, temperature: 1, seed: 5, response_format: zodResponseFormat(Person, "person"),
    });
    const parsed = data.choices[0]!.message.parsed;
    expect(parsed).not.toBeNull();
    expect(Person.parse(parsed)).toEqual(parsed);
  });

  it("chat.completions.parse with a zodFunction tool: parsed_arguments on the call", async () => {
    const data = await client().chat.completions.parse({
      model: "qwen3-4b", messages: [{ role: "user", content: "Weather in Paris?" }], max_tokens: 200, temperature: 1, seed: 6,
      tools: [zodFunction({ name: "get_weather", parameters: City })], tool_choice: "required", parallel_tool_calls: false,
    });
    const [call] = data.choices[0]!.message.tool_calls!;
    expect(call!.type === "function" && City.parse(call!.function.parsed_arguments)).toEqual(call!.type === "function" && call!.function.parsed_arguments);
  });
});

describe("Vercel AI SDK (@ai-sdk/openai-compatible)", () => {
  const svc = () => createOpenAICompatible({ name: "svc", baseURL: gw.baseURL, apiKey: gw.key, supportsStructuredOutputs: true });

  it('generateText with tools and toolChoice "required": a tool call whose input the SDK parsed against the zod schema', async () => {
    const result = await generateText({
      model: svc()("qwen3-4b"),
      prompt: "What is the weather in Paris?",
      tools: { get_weather: tool({ description: "Weather for a city", inputSchema: City }) },
      toolChoice: "required",
      maxOutputTokens: 200,
      temperature: 1,
      seed: 1,
      maxRetries: 0,
    });
    expect(result.finishReason).toBe("tool-calls");
    expect(result.toolCalls.length).toBeGreaterThan(0);
    const [call] = result.toolCalls;
    expect(call!.toolName).toBe("get_weather");
    expect(City.parse(call!.input)).toEqual(call!.input);
  });

  it("generateText runs the tool and sends its result back: the second step answers in text", async () => {
    const result = await generateText({
      model: svc()("qwen3-4b"),
      prompt: "What is the weather in Paris?",
      tools: { get_weather: tool({ inputSchema: jsonSchema<{ city: string }>({ type: "object", properties: { city: { type: "string", maxLength: 12 } }, required: ["city"] }), execute: async () => "18C" }) },
      // a forced call first, then no tools: the model must answer from the result
      prepareStep: ({ stepNumber }) => (stepNumber === 0 ? { toolChoice: "required" } : { toolChoice: "none" }),
      stopWhen: ({ steps }) => steps.length >= 2,
      // extra body fields go through providerOptions under the provider's name
      providerOptions: { svc: { parallel_tool_calls: false } },
      maxOutputTokens: 200,
      temperature: 1,
      seed: 2,
      maxRetries: 0,
    });
    expect(result.steps).toHaveLength(2);
    expect(result.steps[0]!.toolResults.map((r) => r.output)).toContain("18C");
    expect(result.steps[1]!.toolCalls).toEqual([]);
    expect(result.text.length).toBeGreaterThan(0);
  });

  it("generateObject: an object the SDK validated against the zod schema", async () => {
    const { object } = await generateObject({ model: svc()("qwen3-4b"), schema: Person, prompt: "A person.", maxOutputTokens: 200, temperature: 1, seed: 3, maxRetries: 0 });
    expect(Person.parse(object)).toEqual(object);
  });
});

describe("LangChain (@langchain/openai ChatOpenAI)", () => {
  const chat = (seed: number) =>
    new ChatOpenAI({ model: "qwen3-4b", apiKey: gw.key, configuration: { baseURL: gw.baseURL }, temperature: 1, maxTokens: 200, modelKwargs: { seed }, maxRetries: 0 });
  const getWeather = langchainTool(async ({ city }) => `sunny in ${city}`, { name: "get_weather", description: "Weather for a city", schema: City });

  it('bindTools with tool_choice "required": an AIMessage with parsed tool_calls', async () => {
    const message = await chat(1).bindTools([getWeather], { tool_choice: "required" }).invoke("What is the weather in Paris?");
    expect(message).toBeInstanceOf(AIMessage);
    expect(message.tool_calls!.length).toBeGreaterThan(0);
    const [call] = message.tool_calls!;
    expect(call!.name).toBe("get_weather");
    expect(call!.id).toMatch(/^call_/);
    expect(City.parse(call!.args)).toEqual(call!.args);
    expect(message.invalid_tool_calls ?? []).toEqual([]);
  });

  it("the tool's ToolMessage goes back in the history and the model answers", async () => {
    const model = chat(2).bindTools([getWeather]);
    const first = await chat(2).bindTools([getWeather], { tool_choice: "required" }).invoke("Weather in Paris?");
    // every call is answered, as OpenAI requires
    const results = await Promise.all(first.tool_calls!.map((call) => getWeather.invoke(call)));
    const second = await model.invoke(["Weather in Paris?", first, ...results]);
    expect(second).toBeInstanceOf(AIMessage);
  });

  it("withStructuredOutput, jsonSchema and functionCalling: objects that match the zod schema", async () => {
    const viaSchema = await chat(3).withStructuredOutput(Person, { method: "jsonSchema" }).invoke("A person.");
    expect(Person.parse(viaSchema)).toEqual(viaSchema);
    const viaTool = await chat(4).withStructuredOutput(Person, { method: "functionCalling" }).invoke("A person.");
    expect(Person.parse(viaTool)).toEqual(viaTool);
  });
});
