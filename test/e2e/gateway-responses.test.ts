// POST /v1/responses end to end (docs/api.md "Responses"): the openai SDK's `responses.create` against a real
// gateway and agent on the tiny random-weight model. Grammars force the calls and the JSON, so the shapes and the
// receipts are checked, never the text.
import OpenAI from "openai";
import type { Response as OpenAIResponse, ResponseStreamEvent } from "openai/resources/responses/responses";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyReceipt, type Receipt } from "../../src/receipt/receipt.ts";
import { answerOfItems, type OutputItem } from "../../src/receipt/response-items.ts";
import { post, startGateway, type GatewayProcess } from "../fixtures/gateway.ts";

let gw: GatewayProcess;
let client: OpenAI;
beforeAll(async () => {
  gw = await startGateway({ aliases: [{ alias: "qwen3-4b", seed: 1 }] });
  client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.key, maxRetries: 0 });
});
afterAll(() => gw.stop());

const WEATHER = { type: "object", properties: { city: { type: "string", maxLength: 12 } }, required: ["city"], additionalProperties: false };
const tools = [{ type: "function" as const, name: "get_weather", description: "Weather for a city", parameters: WEATHER, strict: true }];

/** The receipt checks against what the items say was answered: content, calls, reasoning, usage and finish reason. */
function receiptProblems(response: OpenAIResponse): string[] {
  const answer = answerOfItems(response.output as OutputItem[], response.status as "completed" | "incomplete");
  if ("problem" in answer) return [answer.problem];
  const receipt = (response as unknown as { svc_receipt: Receipt }).svc_receipt;
  const usage = response.usage!;
  expect(usage.total_tokens).toBe(receipt.usage.total_tokens);
  return verifyReceipt(receipt, {
    providerId: gw.providerId, content: answer.content, toolCalls: answer.toolCalls, reasoning: answer.reasoning, finishReason: answer.finishReason, version: 2,
    usage: { prompt_tokens: usage.input_tokens, completion_tokens: usage.output_tokens, total_tokens: usage.total_tokens, completion_tokens_details: { reasoning_tokens: usage.output_tokens_details.reasoning_tokens } },
  }).problems;
}

describe("Responses: one body", () => {
  it("input as a string: a response object with one message item, usage and a v2 receipt covering the items", async () => {
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

/** The items as the deltas built them, which must be the final response's items. */
function itemsFromDeltas(events: ResponseStreamEvent[]): unknown[] {
  const items: Record<string, unknown>[] = [];
  for (const e of events) {
    if (e.type === "response.output_item.added") {
      expect(e.output_index).toBe(items.length);
      const item = { ...(e.item as object) } as Record<string, unknown>;
      if (item.type !== "function_call") item.content = [];
      items.push(item);
    } else if (e.type === "response.content_part.added") (items[e.output_index]!.content as unknown[]).push({ ...e.part });
    else if (e.type === "response.output_text.delta") ((items[e.output_index]!.content as { text: string }[])[0]!.text += e.delta);
    else if (e.type === "response.function_call_arguments.delta") (items[e.output_index]!.arguments += e.delta);
    else if (e.type === "response.output_item.done") {
      expect(e.item).toEqual({ ...items[e.output_index], status: (e.item as { status: string }).status });
      items[e.output_index] = { ...(e.item as object) };
    }
  }
  return items;
}

describe("Responses: streams", () => {
  it("stream: created, in_progress, the items' events, then completed with the response and its receipt", async () => {
    const events = await eventsOf(await client.responses.create({ model: "qwen3-4b", input: "Say hello.", max_output_tokens: 8, temperature: 0, stream: true }));
    expect(events.slice(0, 4).map((e) => e.type)).toEqual(["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
    const last = events.at(-1)!;
    expect(["response.completed", "response.incomplete"]).toContain(last.type);
    const response = (last as { response: OpenAIResponse }).response;
    expect(itemsFromDeltas(events)).toEqual(response.output);
    expect(events.filter((e) => e.type === "response.output_text.delta").length).toBeGreaterThan(0);
    expect(receiptProblems(response)).toEqual([]);
  });

  it("a streamed forced call: function_call_arguments deltas add up to the call the receipt covers", async () => {
    const events = await eventsOf(
      await client.responses.create({
        model: "qwen3-4b", input: "Weather in Paris?", tools, tool_choice: { type: "function", name: "get_weather" }, max_output_tokens: 200, temperature: 1, seed: 1, stream: true,
      } as never as OpenAI.Responses.ResponseCreateParamsStreaming),
    );
    const response = (events.at(-1) as { response: OpenAIResponse }).response;
    expect(events.at(-1)!.type).toBe("response.completed");
    expect(itemsFromDeltas(events)).toEqual(response.output);
    const done = events.find((e) => e.type === "response.function_call_arguments.done")!;
    expect(done).toMatchObject({ name: "get_weather", output_index: response.output.findIndex((i) => i.type === "function_call") });
    expect(receiptProblems(response)).toEqual([]);
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
