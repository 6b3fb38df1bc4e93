// POST /v1/responses end to end (docs/api.md "Responses"): the openai SDK's `responses.create`, the Vercel AI SDK's
// default @ai-sdk/openai provider and LangChain's ChatOpenAI({useResponsesApi: true}) against a real gateway and
// agent on the tiny random-weight model. Grammars force the calls and the JSON, so the shapes and the
// receipts are checked, never the text.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createOpenAI } from "@ai-sdk/openai";
import { HumanMessage } from "@langchain/core/messages";
import { tool as langchainTool } from "@langchain/core/tools";
import { ChatOpenAI } from "@langchain/openai";
import { generateText, streamText, tool } from "ai";
import OpenAI from "openai";
import type { Response as OpenAIResponse, ResponseStreamEvent } from "openai/resources/responses/responses";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { runCli } from "../../harness/cli.ts";
import { verifySavedResponse } from "../../src/receipt/saved-response.ts";
import { post, openaiGateway, type GatewayProcess } from "../fixtures/gateway.ts";

let gw: GatewayProcess;
let client: OpenAI;
beforeAll(async () => ({ gw, client } = await openaiGateway({
  aliases: [
    { alias: "qwen3-4b", seed: 1 },
    // writes `<think>` and `</think>` often, so a think block can be found
    { alias: "thinker", seed: 6, thinkTags: true },
  ],
})));
afterAll(() => gw.stop());

const WEATHER = { type: "object", properties: { city: { type: "string", maxLength: 12 } }, required: ["city"], additionalProperties: false };
const tools = [{ type: "function" as const, name: "get_weather", description: "Weather for a city", parameters: WEATHER, strict: true }];

/** What `svc-agent verify` finds wrong with an answer the SDK returned, saved as the SDK hands it over. */
const receiptProblems = (response: OpenAIResponse): string[] => verifySavedResponse(JSON.stringify(response), { providerId: gw.providerId }).problems;

describe("Responses: one body", () => {
  it("input as a string: a response object with one message item, usage and a receipt covering the items", async () => {
    const response = await client.responses.create({ model: "qwen3-4b", input: "Say hello.", instructions: "Be brief.", max_output_tokens: 8, temperature: 0 });
    expect(response).toMatchObject({ object: "response", model: "qwen3-4b", instructions: "Be brief.", max_output_tokens: 8, store: false, previous_response_id: null });
    expect(response.id).toMatch(/^resp_[0-9a-f]{48}$/);
    expect(["completed", "incomplete"]).toContain(response.status);
    const message = response.output.find((item) => item.type === "message")!;
    expect(message).toMatchObject({ role: "assistant", content: [{ type: "output_text", annotations: [] }] });
    expect(response.output_text).toBe(message.type === "message" && message.content[0]!.type === "output_text" ? message.content[0]!.text : null);
    if (response.status === "incomplete") expect(response.incomplete_details).toEqual({ reason: "max_output_tokens" });
    expect(receiptProblems(response)).toEqual([]);
  });

  it("text.format json_schema: output_text is JSON the schema accepts", async () => {
    const response = await client.responses.create({
      model: "qwen3-4b", input: "A city.", max_output_tokens: 60, temperature: 1, text: { format: { type: "json_schema", name: "city", schema: WEATHER, strict: true } },
      seed: 3,
    } as never as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    expect(response.status).toBe("completed");
    expect(Object.keys(JSON.parse(response.output_text) as object)).toEqual(["city"]);
    expect(receiptProblems(response)).toEqual([]);
  });

  it("a function-tool round trip: a forced call comes back as function_call items, and its output goes back in input", async () => {
    const first = await client.responses.create({
      model: "qwen3-4b", input: "Weather in Paris?", tools, tool_choice: "required", parallel_tool_calls: false, max_output_tokens: 200, temperature: 1, seed: 1,
    } as never as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    expect(first.status).toBe("completed");
    const calls = first.output.filter((item) => item.type === "function_call");
    expect(calls.length).toBe(1);
    expect(calls[0]).toMatchObject({ name: "get_weather", status: "completed", call_id: expect.stringMatching(/^call_/), id: expect.stringMatching(/^fc_/) });
    expect(Object.keys(JSON.parse(calls[0]!.arguments) as object)).toEqual(["city"]);
    expect(receiptProblems(first)).toEqual([]);

    const second = await client.responses.create({
      model: "qwen3-4b", tools, tool_choice: "none", max_output_tokens: 8, temperature: 0,
      input: [{ role: "user", content: "Weather in Paris?" }, ...(first.output as OpenAI.Responses.ResponseInputItem[]), { type: "function_call_output", call_id: calls[0]!.call_id, output: "18C" }],
    });
    expect(second.output.map((item) => item.type)).toEqual(["message"]);
    expect(receiptProblems(second)).toEqual([]);
  });

  it("previous_response_id, store: true and hosted tools are 400s in the SPEC envelope", async () => {
    for (const [body, param] of [[{ previous_response_id: "resp_1" }, "previous_response_id"], [{ store: true }, "store"], [{ tools: [{ type: "web_search" }] }, "tools[0].type"]] as const) {
      const res = await post(gw, "/v1/responses", { model: "qwen3-4b", input: "x", ...body });
      expect(res.status).toBe(400);
      const { error } = (await res.json()) as { error: Record<string, unknown> };
      expect(error).toMatchObject({ type: "invalid_request_error", code: "unsupported_parameter", param, svc_action: "fix_request" });
    }
  });
});

/** Every event of a stream, checked for OpenAI's numbering from 0. */
async function eventsOf(stream: AsyncIterable<ResponseStreamEvent>): Promise<ResponseStreamEvent[]> {
  const events: ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
  return events;
}

/** The events as a transcript, each on its `event:` line, as the gateway wrote them. */
const transcript = (events: ResponseStreamEvent[]) => events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join("");

describe("Responses: streams", () => {
  it("stream: created, in_progress, the items' events, then completed with the response and its receipt", async () => {
    const events = await eventsOf(await client.responses.create({ model: "qwen3-4b", input: "Say hello.", max_output_tokens: 8, temperature: 0, stream: true }));
    expect(events.slice(0, 4).map((e) => e.type)).toEqual(["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
    const last = events.at(-1)!;
    expect(["response.completed", "response.incomplete"]).toContain(last.type);
    expect(events.filter((e) => e.type === "response.output_text.delta").length).toBeGreaterThan(0);
    // the deltas build exactly the final response's items, whose answer the receipt covers
    expect(verifySavedResponse(transcript(events), { providerId: gw.providerId })).toMatchObject({ status: "valid", saved: { kind: "responses-stream" } });
  });

  it("a streamed forced call: function_call_arguments deltas add up to the call the receipt covers", async () => {
    const events = await eventsOf(
      await client.responses.create({
        model: "qwen3-4b", input: "Weather in Paris?", tools, tool_choice: { type: "function", name: "get_weather" }, max_output_tokens: 200, temperature: 1, seed: 1, stream: true,
      } as never as OpenAI.Responses.ResponseCreateParamsStreaming),
    );
    const response = (events.at(-1) as { response: OpenAIResponse }).response;
    expect(events.at(-1)!.type).toBe("response.completed");
    expect(verifySavedResponse(transcript(events), { providerId: gw.providerId }).problems).toEqual([]);
    const done = events.find((e) => e.type === "response.function_call_arguments.done")!;
    expect(done).toMatchObject({ name: "get_weather", output_index: response.output.findIndex((i) => i.type === "function_call") });
  });

  it("a failure after the head: an error event in the SPEC envelope's words, then response.failed, and no receipt", async () => {
    const events = await eventsOf(await client.responses.create({ model: "qwen3-4b", input: "x", max_output_tokens: 1_000_000, stream: true }));
    expect(events.map((e) => e.type)).toEqual(["response.created", "response.in_progress", "error", "response.failed"]);
    expect(events[2]).toMatchObject({ code: "context_length_exceeded", param: "max_output_tokens", svc_action: "fix_request" });
    const failed = (events[3] as { response: OpenAIResponse }).response;
    expect(failed).toMatchObject({ status: "failed", output: [], usage: null, error: { code: "context_length_exceeded", type: "invalid_request_error" } });
    expect(failed).not.toHaveProperty("svc_receipt");
  });
});

describe("Responses: reasoning", () => {
  // pushes the tiny model toward the tags (as in gateway-tools.test.ts), so that a seed opens and closes a think block
  const nudge = { logit_bias: { "259": 20, "260": 8 }, repetition_penalty: 2, frequency_penalty: 2 };
  const ask = { model: "thinker", input: "Hi.", max_output_tokens: 40, temperature: 1, ...nudge };
  const create = (body: object) => client.responses.create({ ...ask, ...body } as never as OpenAI.Responses.ResponseCreateParamsNonStreaming);

  it("a think block comes back as the first item, a reasoning item, covered by the receipt; streamed, as reasoning_text deltas", async () => {
    let found: OpenAIResponse | undefined;
    let seed = 1;
    for (; seed <= 60 && found === undefined; seed++) {
      const response = await create({ seed });
      if (response.output[0]?.type === "reasoning" && response.output.length > 1) found = response;
    }
    expect(found, "no seed in 1..60 opens and closes a think block").toBeDefined();
    const [reasoning] = found!.output;
    expect(reasoning).toMatchObject({ type: "reasoning", id: expect.stringMatching(/^rs_/), status: "completed", summary: [], content: [{ type: "reasoning_text", text: expect.any(String) }] });
    expect(found!.usage!.output_tokens_details.reasoning_tokens).toBeGreaterThan(0);
    expect(receiptProblems(found!)).toEqual([]);

    const events = await eventsOf(await client.responses.create({ ...ask, seed: seed - 1, stream: true } as never as OpenAI.Responses.ResponseCreateParamsStreaming));
    expect(events.some((e) => (e.type as string) === "response.reasoning_text.delta")).toBe(true);
    const streamed = (events.at(-1) as { response: OpenAIResponse }).response;
    const withoutIds = (items: OpenAIResponse["output"]) => items.map(({ id: _id, ...item }) => item);
    expect(withoutIds(streamed.output)).toEqual(withoutIds(found!.output));
    expect(verifySavedResponse(transcript(events), { providerId: gw.providerId }).problems).toEqual([]);
  });

  it('reasoning.effort "none" renders the no-think prompt: six more prompt tokens, and the effort echoed', async () => {
    const plain = await create({ seed: 1, max_output_tokens: 4 });
    const off = await create({ seed: 1, max_output_tokens: 4, reasoning: { effort: "none" } });
    expect(off.usage!.input_tokens).toBe(plain.usage!.input_tokens + 6);
    expect(off.reasoning).toEqual({ effort: "none", summary: null });
  });
});

describe("Responses: svc-agent verify re-checks a saved answer", () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-responses-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const save = async (name: string, body: Record<string, unknown>) => {
    const res = await post(gw, "/v1/responses", { model: "qwen3-4b", input: "Weather in Paris?", tools, tool_choice: "required", max_output_tokens: 200, temperature: 1, seed: 1, ...body });
    expect(res.status).toBe(200);
    const path = join(dir, name);
    writeFileSync(path, await res.text());
    return path;
  };

  it("a saved body and a saved stream are VALID against the gateway's provider listing", async () => {
    for (const [path, kind] of [[await save("body.json", {}), "a Responses API response"], [await save("stream.sse", { stream: true }), "a Responses API event stream"]] as const) {
      const result = await runCli("svc-agent", ["verify", path, "--providers", gw.url, "--api-key", gw.key]);
      expect(result.code, result.stdout + result.stderr).toBe(0);
      expect(result.stdout).toContain(kind);
      expect(result.stdout.trimEnd().split("\n").at(-1)).toMatch(/^VALID/);
    }
    // the call's arguments changed after the fact
    const body = JSON.parse(readFileSync(join(dir, "body.json"), "utf8")) as { output: { type: string; arguments?: string }[] };
    body.output.find((item) => item.type === "function_call")!.arguments = '{"city":"Lyon"}';
    writeFileSync(join(dir, "edited.json"), JSON.stringify(body));
    const edited = await runCli("svc-agent", ["verify", join(dir, "edited.json"), "--providers", gw.url, "--api-key", gw.key]);
    expect(edited.code).toBe(1);
    expect(edited.stdout).toContain("tool_calls_sha256");
  });
});

// strings kept short, so that a random model's call fits in the output budget
const City = z.object({ city: z.string().max(12).describe("the city") });

describe("Responses: the Vercel AI SDK's default @ai-sdk/openai provider", () => {
  const openai = () => createOpenAI({ baseURL: gw.baseURL, apiKey: gw.key });

  it('generateText with tools and toolChoice "required": a call whose input the SDK parsed against the zod schema', async () => {
    const result = await generateText({
      model: openai()("qwen3-4b"), prompt: "What is the weather in Paris?", tools: { get_weather: tool({ description: "Weather for a city", inputSchema: City }) },
      toolChoice: "required", maxOutputTokens: 200, temperature: 1, maxRetries: 0, providerOptions: { openai: { parallelToolCalls: false } },
    });
    expect(result.finishReason).toBe("tool-calls");
    expect(result.toolCalls.map((call) => call.toolName)).toEqual(["get_weather"]);
    expect(City.parse(result.toolCalls[0]!.input)).toEqual(result.toolCalls[0]!.input);
  });

  it("generateText runs the tool and sends its result back without stored state: the second step answers in text", async () => {
    const result = await generateText({
      model: openai()("qwen3-4b"), prompt: "What is the weather in Paris?", tools: { get_weather: tool({ inputSchema: City, execute: async () => "18C" }) },
      prepareStep: ({ stepNumber }) => (stepNumber === 0 ? { toolChoice: "required" } : { toolChoice: "none" }),
      stopWhen: ({ steps }) => steps.length >= 2,
      // the provider sends earlier items by reference unless told svc stores nothing
      providerOptions: { openai: { store: false, parallelToolCalls: false } },
      maxOutputTokens: 200, temperature: 1, maxRetries: 0,
    });
    expect(result.steps.map((step) => step.finishReason)).toEqual(["tool-calls", expect.stringMatching(/^(stop|length)$/)]);
    expect(result.steps[0]!.toolResults.map((r) => r.output)).toEqual(["18C"]);
  });

  it("streamText with tools: the streamed call arrives whole and parses", async () => {
    const result = streamText({
      model: openai()("qwen3-4b"), prompt: "What is the weather in Paris?", tools: { get_weather: tool({ inputSchema: City }) },
      toolChoice: { type: "tool", toolName: "get_weather" }, maxOutputTokens: 200, temperature: 1, maxRetries: 0,
      onError: ({ error }) => { throw error; },
    });
    const calls = await result.toolCalls;
    expect(await result.finishReason).toBe("tool-calls");
    expect(calls.map((call) => call.toolName)).toEqual(["get_weather"]);
    expect(City.parse(calls[0]!.input)).toEqual(calls[0]!.input);
  });
});

describe("Responses: LangChain ChatOpenAI({useResponsesApi: true})", () => {
  it("bindTools with a forced tool: an AIMessage with a parsed tool call, then the tool's answer sent back", async () => {
    const model = new ChatOpenAI({ model: "qwen3-4b", apiKey: gw.key, configuration: { baseURL: gw.baseURL }, useResponsesApi: true, maxRetries: 0, maxTokens: 200, temperature: 1 });
    const getWeather = langchainTool(async () => "18C", { name: "get_weather", description: "Weather for a city", schema: City });
    const ask = new HumanMessage("What is the weather in Paris?");
    const message = await model.bindTools([getWeather], { tool_choice: "get_weather", parallel_tool_calls: false }).invoke([ask]);
    expect(message.tool_calls?.map((call) => call.name)).toEqual(["get_weather"]);
    expect(City.parse(message.tool_calls![0]!.args)).toEqual(message.tool_calls![0]!.args);
    const answer = await model.bindTools([getWeather], { tool_choice: "none" }).invoke([ask, message, await getWeather.invoke(message.tool_calls![0]!)]);
    expect(answer.tool_calls ?? []).toEqual([]);
    expect(typeof answer.text).toBe("string");
  });
});
