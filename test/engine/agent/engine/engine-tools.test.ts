// Tool calling and reasoning on real llama.cpp with tiny random-weight qwen3 models: grammars force the calls,
// so whatever the weights write, the mechanics hold. Mechanics only, never what the text says.
import { afterAll, describe, expect, it } from "vitest";
import { Engine } from "../../../../agent/engine/engine.ts";
import type { GenerateRequest, Turn } from "../../../../agent/engine/turn.ts";
import { ModelStore } from "../../../../agent/models/store.ts";
import { validate } from "../../../../src/schema/validate.ts";
import type { FunctionTool } from "../../../../src/session/tools.ts";
import { askEngine, collect } from "../../../fixtures/engine-request.ts";
import { makeTinyCatalog } from "../../../fixtures/tiny-catalog.ts";

const tiny = makeTinyCatalog([
  { alias: "qwen3-4b", seed: 1 },
  { alias: "caller", seed: 3, toolTags: true },
  { alias: "thinker", seed: 6, thinkTags: true },
]);
const engine = new Engine({ store: new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir }), gpu: false, threads: 1 });
afterAll(async () => {
  await engine.dispose();
  tiny.cleanup();
});

const WEATHER = { type: "object", properties: { city: { type: "string", maxLength: 12 }, unit: { enum: ["C", "F"] } }, required: ["city", "unit"], additionalProperties: false };
const TIME = { type: "object", properties: { tz: { type: "string", maxLength: 8 } }, required: ["tz"] };
const tools: FunctionTool[] = [
  { type: "function", function: { name: "get_weather", parameters: WEATHER } },
  { type: "function", function: { name: "get_time", parameters: TIME } },
];
const schemaOf = (name: string) => tools.find((t) => t.function.name === name)!.function.parameters;
const ask = (overrides: Partial<GenerateRequest> = {}) => askEngine({ max_tokens: 200, temperature: 1, tools, ...overrides });
const generate = (turn: Turn) => collect(engine.generate(turn));

describe("tool_choice on the engine", () => {
  it('"required": at temperature 1, every seed gives calls whose arguments validate, and finish_reason tool_calls', async () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const { answer, done } = await generate(ask({ seed, tool_choice: "required", parallel_tool_calls: false }));
      expect(done.finish_reason, `seed ${seed}`).toBe("tool_calls");
      expect(answer.toolCalls).toHaveLength(1);
      expect(answer.content).toBe("");
      const [call] = answer.toolCalls;
      expect(validate(JSON.parse(call!.function.arguments), schemaOf(call!.function.name)), call!.function.arguments).toEqual([]);
    }
  });

  it("a named function: only that one is called", async () => {
    for (const seed of [1, 2, 3]) {
      const { answer } = await generate(ask({ seed, tool_choice: { type: "function", function: { name: "get_weather" } } }));
      expect(answer.toolCalls.map((c) => c.function.name)).toEqual(["get_weather"]);
    }
  });

  it('"auto": a model that writes <tool_call> on its own gets a well-formed call; without tools the same text is content', async () => {
    const { answer, done } = await generate(ask({ model: "caller", seed: 1, parallel_tool_calls: false }));
    expect(done.finish_reason).toBe("tool_calls");
    expect(answer.toolCalls).toHaveLength(1);
    expect(validate(JSON.parse(answer.toolCalls[0]!.function.arguments), schemaOf(answer.toolCalls[0]!.function.name))).toEqual([]);
    const plain = await generate(askEngine({ model: "caller", max_tokens: 200, temperature: 1, seed: 1 }));
    expect(plain.text).toContain("<tool_call>");
    expect(plain.answer.toolCalls).toEqual([]);
  });

  it('"none": the <tool_call> token is banned, so the same model makes no call', async () => {
    const { answer, text } = await generate(ask({ model: "caller", seed: 1, max_tokens: 120, tool_choice: "none" }));
    expect(answer.toolCalls).toEqual([]);
    expect(text).not.toContain("<tool_call>");
  });

  it("the tools' grammar is compiled once for the same tools and options", async () => {
    const before = engine.grammarCompiles;
    await generate(ask({ seed: 1, max_tokens: 8, tool_choice: "required", parallel_tool_calls: true }));
    await generate(ask({ seed: 2, max_tokens: 8, tool_choice: "required", parallel_tool_calls: true }));
    expect(engine.grammarCompiles - before).toBe(1);
  });
});

describe("reasoning on the engine", () => {
  it('"parsed": a block that opens the answer comes out as reasoning events, counted in reasoning_tokens', async () => {
    const nudge = { logit_bias: { "259": 20, "260": 8 }, repetition_penalty: 2, frequency_penalty: 2 };
    let found = false;
    for (let seed = 1; seed <= 60 && !found; seed++) {
      const inline = await generate(askEngine({ model: "thinker", max_tokens: 40, temperature: 1, seed, ...nudge }));
      if (!(inline.text.startsWith("<think>") && inline.text.includes("</think>"))) continue;
      found = true;
      const parsed = await generate(askEngine({ model: "thinker", max_tokens: 40, temperature: 1, seed, ...nudge, reasoning_format: "parsed" }));
      expect(parsed.events.findIndex((e) => e.type === "delta")).toBeGreaterThan(parsed.events.findIndex((e) => e.type === "reasoning"));
      expect(parsed.answer.reasoning).not.toBeNull();
      expect(parsed.done.completion_tokens).toBe(inline.done.completion_tokens);
      // the tokens up to and including </think>: at least its own, never more than the answer
      expect(parsed.done.reasoning_tokens).toBeGreaterThanOrEqual(2);
      expect(parsed.done.reasoning_tokens).toBeLessThan(parsed.done.completion_tokens);
    }
    expect(found, "a seed whose answer opens and closes a think block").toBe(true);
  });

  it("without parsed reasoning there is no reasoning_tokens figure and no reasoning event", async () => {
    const { done, events } = await generate(askEngine({ model: "thinker", max_tokens: 20, temperature: 1, seed: 1 }));
    expect(done.reasoning_tokens).toBeUndefined();
    expect(events.some((e) => e.type === "reasoning")).toBe(false);
  });
});
