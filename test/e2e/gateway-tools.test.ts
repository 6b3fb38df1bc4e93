// Tool calling and reasoning end to end: the official `openai` SDK against a real `svc-gateway serve` and a real
// agent on tiny random-weight models. Grammars force the calls, so the mechanics are checked, never the text: the
// message and stream shapes OpenAI defines, a full tool round trip, and v3 receipts that cover calls and reasoning.
import OpenAI from "openai";
import type { ChatCompletionChunk, ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { splitThink } from "../../agent/engine/answer/think-splitter.ts";
import { validate } from "../../src/schema/validate.ts";
import { verifyReceipt, type Receipt } from "../../src/receipt/receipt.ts";
import { verifySavedResponse } from "../../src/receipt/saved-response.ts";
import { openaiGateway, type GatewayProcess } from "../fixtures/gateway.ts";

let gw: GatewayProcess;
let client: OpenAI;
beforeAll(async () => ({ gw, client } = await openaiGateway({
  aliases: [
    { alias: "qwen3-4b", seed: 1 },
    // writes `<tool_call>` on its own, so "auto" calls
    { alias: "caller", seed: 3, toolTags: true },
    // writes `<think>` and `</think>` often, so a think block can be found
    { alias: "thinker", seed: 6, thinkTags: true },
  ],
})));
afterAll(() => gw.stop());

const WEATHER = { type: "object", properties: { city: { type: "string", maxLength: 12 }, days: { type: "integer" } }, required: ["city", "days"], additionalProperties: false };
const tools: ChatCompletionTool[] = [
  { type: "function", function: { name: "get_weather", description: "Weather for a city", parameters: WEATHER } },
  { type: "function", function: { name: "get_time", parameters: { type: "object", properties: { tz: { type: "string", maxLength: 8 } }, required: ["tz"] } } },
];
const ask: ChatCompletionMessageParam[] = [{ role: "user", content: "What is the weather in Paris?" }];
const receiptOf = (body: unknown) => (body as { svc_receipt: Receipt }).svc_receipt;

describe("§2.2 tool calls in a completion", () => {
  it('tool_choice "required": message.tool_calls whose arguments validate, finish_reason tool_calls, a v3 receipt covering them', async () => {
    const data = await client.chat.completions.create({ model: "qwen3-4b", messages: ask, tools, tool_choice: "required", max_tokens: 200, temperature: 1, seed: 1 });
    const [choice] = data.choices;
    expect(choice?.finish_reason).toBe("tool_calls");
    const calls = choice!.message.tool_calls!;
    expect(calls.length).toBeGreaterThan(0);
    expect(choice!.message.content).toBeNull();
    for (const call of calls) {
      expect(call.type).toBe("function");
      expect(call.id).toMatch(/^call_[A-Za-z0-9]{24}$/);
      if (call.type !== "function") continue;
      const schema = tools.find((t) => t.type === "function" && t.function.name === call.function.name);
      expect(schema, call.function.name).toBeDefined();
      expect(validate(JSON.parse(call.function.arguments), (schema as { function: { parameters: unknown } }).function.parameters)).toEqual([]);
    }
    const receipt = receiptOf(data);
    expect(receipt.version).toBe(3);
    const verdict = verifyReceipt(receipt, { providerId: gw.providerId, content: "", toolCalls: calls, reasoning: null, version: 3, usage: data.usage, finishReason: "tool_calls" });
    expect(verdict.problems).toEqual([]);
    // one changed byte in the arguments and the receipt no longer covers them
    const forged = calls.map((c, i) => (i === 0 && c.type === "function" ? { ...c, function: { ...c.function, arguments: `${c.function.arguments} ` } } : c));
    expect(verifyReceipt(receipt, { providerId: gw.providerId, toolCalls: forged }).problems).toEqual([expect.stringContaining("tool_calls_sha256")]);
  });

  it("a named function with parallel_tool_calls false: exactly one call, to that function", async () => {
    const data = await client.chat.completions.create({
      model: "qwen3-4b", messages: ask, tools, tool_choice: { type: "function", function: { name: "get_time" } }, parallel_tool_calls: false, max_tokens: 200, temperature: 1, seed: 2,
    });
    const calls = data.choices[0]!.message.tool_calls!;
    expect(calls).toHaveLength(1);
    expect(calls[0]!.type === "function" && calls[0]!.function.name).toBe("get_time");
  });

  it('"auto": a model that writes <tool_call> gets its call parsed; text before it stays content', async () => {
    const data = await client.chat.completions.create({ model: "caller", messages: ask, tools, max_tokens: 200, temperature: 1, seed: 1, parallel_tool_calls: false });
    const [choice] = data.choices;
    expect(choice?.finish_reason).toBe("tool_calls");
    expect(choice!.message.tool_calls).toHaveLength(1);
    expect(choice!.message.content ?? "").not.toContain("<tool_call>");
    expect(verifyReceipt(receiptOf(data), { providerId: gw.providerId, content: choice!.message.content ?? "", toolCalls: choice!.message.tool_calls! }).problems).toEqual([]);
  });

  it('"none": the same model makes no call', async () => {
    const data = await client.chat.completions.create({ model: "caller", messages: ask, tools, tool_choice: "none", max_tokens: 60, temperature: 1, seed: 1 });
    expect(data.choices[0]!.message.tool_calls).toBeUndefined();
    expect(data.choices[0]!.finish_reason).toBe("length");
  });

  it("a round trip: the call and its result go back as history, and the model answers in text", async () => {
    const first = await client.chat.completions.create({ model: "qwen3-4b", messages: ask, tools, tool_choice: "required", parallel_tool_calls: false, max_tokens: 200, temperature: 1, seed: 3 });
    const call = first.choices[0]!.message.tool_calls![0]!;
    const history: ChatCompletionMessageParam[] = [...ask, first.choices[0]!.message, { role: "tool", tool_call_id: call.id, content: "18C and sunny" }];
    const second = await client.chat.completions.create({ model: "qwen3-4b", messages: history, tools, max_tokens: 16, temperature: 0 });
    expect(second.choices[0]!.message.tool_calls).toBeUndefined();
    expect(second.choices[0]!.message.content!.length).toBeGreaterThan(0);
    // the tool result is in the sealed request, so it is in what the receipt's request_sha256 covers
    expect(receiptOf(second).usage.prompt_tokens).toBeGreaterThan(receiptOf(first).usage.prompt_tokens);
  });
});

describe("§3 tool calls in a stream", () => {
  it("delta.tool_calls as OpenAI sends them: index, id, type and name first, then arguments pieces that join to JSON", async () => {
    const stream = await client.chat.completions.create({ model: "qwen3-4b", messages: ask, tools, tool_choice: "required", max_tokens: 200, temperature: 1, seed: 1, stream: true });
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const deltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    const byIndex = new Map<number, { id?: string; name?: string; args: string; pieces: number }>();
    for (const d of deltas) {
      const seen = byIndex.get(d.index);
      if (!seen) {
        // the first delta of a call carries its id, type and name, and an empty arguments string
        expect([typeof d.id, d.type, typeof d.function?.name, d.function?.arguments]).toEqual(["string", "function", "string", ""]);
        byIndex.set(d.index, { id: d.id, name: d.function!.name, args: "", pieces: 0 });
      } else {
        expect(d.id).toBeUndefined();
        seen.args += d.function?.arguments ?? "";
        seen.pieces++;
      }
    }
    expect([...byIndex.keys()]).toEqual([...byIndex.keys()].map((_, i) => i));
    for (const call of byIndex.values()) {
      expect(call.pieces).toBeGreaterThan(1); // streamed, not sent whole at the end
      JSON.parse(call.args);
    }
    const last = chunks.at(-1)! as unknown as { choices: { finish_reason: string }[]; usage: unknown; svc_receipt: Receipt };
    expect(last.choices[0]!.finish_reason).toBe("tool_calls");
    const calls = [...byIndex.values()].map((c) => ({ id: c.id!, type: "function", function: { name: c.name!, arguments: c.args } }));
    expect(verifyReceipt(last.svc_receipt, { providerId: gw.providerId, content: "", toolCalls: calls, usage: last.usage }).problems).toEqual([]);
  });
});

describe("RECEIPTS.md offline: a saved answer with tool calls verifies as saved", () => {
  const post = (body: Record<string, unknown>) =>
    fetch(`${gw.baseURL}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${gw.key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  const body = { model: "qwen3-4b", messages: ask, tools, tool_choice: "required", max_tokens: 200, temperature: 1, seed: 5 };

  it("a saved JSON body and a saved SSE transcript are VALID; an edited argument is INVALID", async () => {
    const json = await (await post(body)).text();
    expect(verifySavedResponse(json, { providerId: gw.providerId }).problems).toEqual([]);
    expect(verifySavedResponse(json, { providerId: gw.providerId }).status).toBe("valid");
    const sse = await (await post({ ...body, stream: true })).text();
    expect(sse).toContain('"tool_calls":[{"index":0,"id":"call_');
    expect(verifySavedResponse(sse, { providerId: gw.providerId }).status).toBe("valid");
    // the model's first argument character, edited in the transcript
    const edited = sse.replace(/("arguments":")([^"\\])/, (_, head: string, ch: string) => head + (ch === "x" ? "y" : "x"));
    expect(edited).not.toBe(sse);
    const verdict = verifySavedResponse(edited, { providerId: gw.providerId });
    expect(verdict.status).toBe("invalid");
    expect(verdict.problems).toEqual([expect.stringContaining("tool_calls_sha256")]);
    // a name slipped into a delta without an id: it continues the call, so it must not rename it
    const renamed = sse.replace('{"index":0,"function":{"arguments":', '{"index":0,"function":{"name":"delete_files","arguments":');
    expect(renamed).not.toBe(sse);
    expect(verifySavedResponse(renamed, { providerId: gw.providerId }).problems).toEqual([expect.stringMatching(/delta\.tool_calls: tool call 0 changes its name from \w+ to delete_files$/)]);
  });
});

describe("reasoning_format: the <think> block apart", () => {
  // `<think>` (259) pushed up so that an answer may open with it, `</think>` (260) so that it may close, and a
  // repetition penalty so that the first `<think>` is not followed by more of them
  const nudge = { logit_bias: { "259": 20, "260": 8 }, repetition_penalty: 2, frequency_penalty: 2 };

  /** A seed whose inline answer opens with a think block and closes it. */
  async function thinkingSeed(): Promise<{ seed: number; inline: string }> {
    for (let seed = 1; seed <= 60; seed++) {
      const data = await client.chat.completions.create({ model: "thinker", messages: ask, max_tokens: 40, temperature: 1, seed, ...nudge });
      const content = data.choices[0]!.message.content!;
      if (content.startsWith("<think>") && content.includes("</think>")) return { seed, inline: content };
    }
    throw new Error("no seed in 1..60 opens and closes a think block");
  }

  it('by default the think block stays in content (SPEC §1); "parsed" returns it as reasoning_content, same seed, same split', async () => {
    const { seed, inline } = await thinkingSeed();
    const body = { model: "thinker", messages: ask, max_tokens: 40, temperature: 1, seed, ...nudge, reasoning_format: "parsed" };
    const data = await client.chat.completions.create(body as never as OpenAI.ChatCompletionCreateParamsNonStreaming);
    const message = data.choices[0]!.message as unknown as { content: string; reasoning_content: string };
    expect({ reasoning: message.reasoning_content, content: message.content }).toEqual(splitThink(inline));
    const usage = data.usage as unknown as { completion_tokens: number; completion_tokens_details: { reasoning_tokens: number } };
    expect(usage.completion_tokens_details.reasoning_tokens).toBeGreaterThan(0);
    expect(usage.completion_tokens_details.reasoning_tokens).toBeLessThanOrEqual(usage.completion_tokens);
    const receipt = receiptOf(data);
    expect(verifyReceipt(receipt, { providerId: gw.providerId, content: message.content, reasoning: message.reasoning_content, toolCalls: [], usage: data.usage, version: 3 }).problems).toEqual([]);
    expect(verifyReceipt(receipt, { providerId: gw.providerId, reasoning: `${message.reasoning_content}.` }).problems).toEqual([expect.stringContaining("reasoning_sha256")]);

    // the same, streamed: delta.reasoning_content pieces, then content
    const stream = await client.chat.completions.create({ ...(body as object), stream: true } as never as OpenAI.ChatCompletionCreateParamsStreaming);
    let reasoning = "";
    let content = "";
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { content?: string; reasoning_content?: string } | undefined;
      reasoning += delta?.reasoning_content ?? "";
      content += delta?.content ?? "";
    }
    expect({ reasoning, content }).toEqual({ reasoning: message.reasoning_content, content: message.content });
  });

  it('reasoning_effort "none" and chat_template_kwargs.enable_thinking false render the no-think prompt', async () => {
    const plain = await client.chat.completions.create({ model: "thinker", messages: ask, max_tokens: 4, temperature: 0 });
    const off = await client.chat.completions.create({ model: "thinker", messages: ask, max_tokens: 4, temperature: 0, reasoning_effort: "none" as never });
    const kwargs = await client.chat.completions.create({ model: "thinker", messages: ask, max_tokens: 4, temperature: 0, chat_template_kwargs: { enable_thinking: false } } as never as OpenAI.ChatCompletionCreateParamsNonStreaming);
    // "<think>\n\n</think>\n\n" closes the prompt: 6 more tokens than the plain prompt (the tiny vocabulary has no "\n\n")
    expect(off.usage!.prompt_tokens).toBe(plain.usage!.prompt_tokens + 6);
    expect(kwargs.usage!.prompt_tokens).toBe(off.usage!.prompt_tokens);
  });
});

describe("§2.1 tool fields that cannot be served: 400 naming the field", () => {
  const fault = async (body: Record<string, unknown>) => {
    const err = await client.chat.completions.create({ model: "qwen3-4b", messages: ask, ...body } as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    return [e.code, e.param];
  };

  it("a tool_choice naming no tool, a strict schema the grammar cannot enforce, a tool message answering no call", async () => {
    expect(await fault({ tools, tool_choice: { type: "function", function: { name: "launch" } } })).toEqual(["invalid_value", "tool_choice.function.name"]);
    const strict = [{ type: "function", function: { name: "f", strict: true, parameters: { type: "object", properties: { e: { type: "string", format: "uri" } } } } }];
    expect(await fault({ tools: strict })).toEqual(["invalid_value", "tools[0].function.parameters.properties.e.format"]);
    expect(await fault({ messages: [...ask, { role: "tool", tool_call_id: "call_x", content: "18C" }] })).toEqual(["invalid_value", "messages[1].tool_call_id"]);
  });
});
