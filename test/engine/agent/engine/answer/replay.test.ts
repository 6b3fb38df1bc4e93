// AUDIT-DESIGN §1 item 2 on real llama.cpp with the tiny qwen3 models: the token ids an answer's logprobs list,
// replayed through the agent's answer path (agent/engine/answer/replay.ts), rebuild the answer the engine gave, for
// plain text, a stop sequence, parsed reasoning, tool calls and a JSON answer; ids that did not make it do not.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getLlama, type Llama, type LlamaModel } from "node-llama-cpp";
import { Engine } from "../../../../../agent/engine/engine.ts";
import { replayAnswer } from "../../../../../agent/engine/answer/replay.ts";
import { planTurn, type GenerateRequest } from "../../../../../agent/engine/turn.ts";
import { ModelStore } from "../../../../../agent/models/store.ts";
import { collect, engineRequest } from "../../../../fixtures/engine-request.ts";
import { makeTinyCatalog } from "../../../../fixtures/tiny-catalog.ts";

const tiny = makeTinyCatalog([
  { alias: "qwen3-4b", seed: 1 },
  { alias: "caller", seed: 3, toolTags: true },
  { alias: "thinker", seed: 6, thinkTags: true },
]);
const store = new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir });
const engine = new Engine({ store, gpu: false, threads: 1 });
let llama: Llama;
const models = new Map<string, LlamaModel>();
beforeAll(async () => {
  llama = await getLlama({ gpu: false });
  for (const alias of ["qwen3-4b", "caller", "thinker"]) models.set(alias, await llama.loadModel({ modelPath: (await store.verify(alias)).path }));
});
afterAll(async () => {
  await engine.dispose();
  for (const model of models.values()) await model.dispose();
  tiny.cleanup();
});

const WEATHER = { type: "object", properties: { city: { type: "string", maxLength: 12 } }, required: ["city"], additionalProperties: false };
const tools = [{ type: "function" as const, function: { name: "get_weather", parameters: WEATHER } }];

/** The engine's answer, and what its logprobs' ids make when replayed. */
async function replayed(overrides: Partial<GenerateRequest>) {
  const request = engineRequest({ temperature: 1, seed: 5, top_logprobs: 0, ...overrides });
  const turn = planTurn(request);
  const { answer, done } = await collect(engine.generate(turn));
  const ids = answer.logprobs.map((e) => e.id);
  const again = replayAnswer(models.get(request.model)!, planTurn(request), ids, done.finish_reason, answer.toolCalls.map((c) => c.id));
  return { answer, done, ids, again, model: models.get(request.model)!, request };
}

const same = (a: { content: string; reasoning: string | null; toolCalls: unknown[] }, b: typeof a) => expect({ content: a.content, reasoning: a.reasoning, toolCalls: a.toolCalls }).toEqual({ content: b.content, reasoning: b.reasoning, toolCalls: b.toolCalls });

describe("replayAnswer: a provider's tokens make the answer it signed", () => {
  it("plain text, and a stop sequence (its tokens counted, its text cut)", async () => {
    const plain = await replayed({ max_tokens: 30 });
    expect(plain.answer.content.length).toBeGreaterThan(0);
    same(plain.again.record, plain.answer);
    expect(plain.again.used).toBe(plain.ids.length);
    const stop = await replayed({ max_tokens: 60, stop: [plain.answer.content.slice(8, 10)] });
    expect(stop.done.finish_reason).toBe("stop");
    same(stop.again.record, stop.answer);
  });

  it("parsed reasoning, tool calls and a JSON answer", async () => {
    // a bias toward <think> and </think> (engine-tools.test.ts), and the first seed whose answer opens a whole block
    const nudge = { logit_bias: { "259": 20, "260": 8 }, repetition_penalty: 2, frequency_penalty: 2 };
    let thinking;
    for (let seed = 1; seed <= 60 && thinking?.answer.reasoning == null; seed++) thinking = await replayed({ model: "thinker", max_tokens: 40, seed, ...nudge, reasoning_format: "parsed" });
    expect(thinking!.answer.reasoning).not.toBeNull();
    same(thinking!.again.record, thinking!.answer);
    const calls = await replayed({ model: "caller", max_tokens: 200, tools, tool_choice: "required" });
    expect(calls.done.finish_reason).toBe("tool_calls");
    same(calls.again.record, calls.answer);
    const json = await replayed({ max_tokens: 200, response_format: { type: "json_object" } });
    expect(() => JSON.parse(json.answer.content)).not.toThrow();
    same(json.again.record, json.answer);
  });

  it("ids that did not make the answer make another one", async () => {
    const plain = await replayed({ max_tokens: 30 });
    const other = replayAnswer(plain.model, planTurn(plain.request), [...plain.ids].reverse(), plain.done.finish_reason);
    expect(other.record.content).not.toBe(plain.answer.content);
  });
});
