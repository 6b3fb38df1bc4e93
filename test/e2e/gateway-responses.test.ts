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
