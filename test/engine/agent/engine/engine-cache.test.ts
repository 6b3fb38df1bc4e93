// DESIGN §9's prompt cache in the engine, on real llama.cpp with the tiny qwen3 model: a scope's next turn reads
// only what is new, answers exactly as a cold run does, and no scope ever continues another's conversation.
import { afterAll, describe, expect, it } from "vitest";
import { Engine, type EngineOptions } from "../../../../agent/engine/engine.ts";
import type { ChatMessage } from "../../../../agent/engine/engine.ts";
import type { GenerateRequest } from "../../../../agent/engine/turn.ts";
import { ModelStore } from "../../../../agent/models/store.ts";
import type { FunctionTool } from "../../../../src/session/tools.ts";
import { askEngine, collect } from "../../../fixtures/engine-request.ts";
import { makeTinyCatalog } from "../../../fixtures/tiny-catalog.ts";

const tiny = makeTinyCatalog([
  { alias: "qwen3-4b", seed: 1 },
  { alias: "caller", seed: 3, toolTags: true },
  { alias: "thinker", seed: 6, thinkTags: true },
]);
const engines: Engine[] = [];
const engineWith = (options: Partial<EngineOptions> = {}) => {
  const engine = new Engine({ store: new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir }), gpu: false, threads: 1, ...options });
  engines.push(engine);
  return engine;
};
afterAll(async () => {
  for (const engine of engines) await engine.dispose();
  tiny.cleanup();
});

const scopeA = "a".repeat(64);
const scopeB = "b".repeat(64);
const system: ChatMessage = { role: "system", content: "You are a careful agent. Tools: read_file(path), write_file(path, text). ".repeat(6) };
const first: ChatMessage[] = [system, { role: "user", content: "Read the config and tell me the port." }];
const generate = (engine: Engine, messages: ChatMessage[], overrides: Partial<GenerateRequest> = {}) =>
  collect(engine.generate(askEngine({ messages, max_tokens: 24, temperature: 0, seed: 7, ...overrides })));
/** The next turn: the answer given, then a new user message. */
const next = (messages: ChatMessage[], answer: string, user: string): ChatMessage[] => [...messages, { role: "assistant", content: answer }, { role: "user", content: user }];

describe("DESIGN §9: a scope's next turn reuses its prefix and answers as a cold run", () => {
  const engine = engineWith();

  it("turn 2 reads only what is new: cached_tokens is the shared prefix, and the tokens are the cold run's", async () => {
    const one = await generate(engine, first, { cache_scope: scopeA });
    expect(one.done.cached_tokens).toBe(0);
    const second = next(first, one.text, "Now change it to 8080.");
    const cold = await generate(engine, second, { cache_prompt: false, cache_scope: scopeA });
    expect(cold.done.cached_tokens).toBe(0);
    const hit = await generate(engine, second, { cache_scope: scopeA });
    expect(hit.done.cached_tokens).toBeGreaterThan(first.map((m) => m.content ?? "").join("").length);
    expect(hit.done.cached_tokens).toBeLessThan(hit.done.prompt_tokens);
    expect(hit.done.prompt_tokens).toBe(cold.done.prompt_tokens);
    expect(hit.text).toBe(cold.text);
    expect(hit.done.completion_tokens).toBe(cold.done.completion_tokens);
  });

  it("the same prompt again reuses all but its last token", async () => {
    const again = await generate(engine, first, { cache_scope: scopeB });
    const hit = await generate(engine, first, { cache_scope: scopeB });
    expect(hit.done.cached_tokens).toBe(hit.done.prompt_tokens - 1);
    expect(hit.text).toBe(again.text);
  });

  it("an edit early in the conversation: only the tokens before it are reused, and the answer is the cold run's", async () => {
    const scope = "e".repeat(64);
    const one = await generate(engine, first, { cache_scope: scope });
    const long = await generate(engine, next(first, one.text, "And the host?"), { cache_scope: scope });
    // the first user message edited: the system prompt is all the two share
    const edited: ChatMessage[] = [system, { role: "user", content: "Read the README and tell me the port." }];
    const cold = await generate(engine, edited, { cache_prompt: false });
    const hit = await generate(engine, edited, { cache_scope: scope });
    expect(hit.done.cached_tokens).toBeGreaterThan(system.content!.length / 2);
    expect(hit.done.cached_tokens).toBeLessThan(one.done.prompt_tokens - 1);
    expect(hit.done.cached_tokens).toBeLessThan(long.done.cached_tokens);
    expect(hit.text).toBe(cold.text);
    // and what the edit left is now the scope's: the same prompt again reuses all but its last token
    expect((await generate(engine, edited, { cache_scope: scope })).done.cached_tokens).toBe(hit.done.prompt_tokens - 1);
  });

  it("sampling at temperature 0.9 with a seed, penalties and a JSON grammar give the same tokens on a hit", async () => {
    const cases: Partial<GenerateRequest>[] = [
      { temperature: 0.9, seed: 11 },
      { temperature: 0.9, seed: 12, repetition_penalty: 1.3, frequency_penalty: 0.5, presence_penalty: 0.4 },
      { response_format: { type: "json_object" }, max_tokens: 40 },
    ];
    for (const [i, sampling] of cases.entries()) {
      const scope = String(i).repeat(64);
      const one = await generate(engine, first, { ...sampling, cache_scope: scope });
      const second = next(first, one.text, `Case ${i}: answer in JSON.`);
      const cold = await generate(engine, second, { ...sampling, cache_scope: scope, cache_prompt: false });
      const hit = await generate(engine, second, { ...sampling, cache_scope: scope });
      expect(hit.done.cached_tokens, `case ${i}`).toBeGreaterThan(0);
      expect(hit.text, `case ${i}`).toBe(cold.text);
    }
  });
});

describe("DESIGN §9: tool calls, stop and reasoning work the same on a hit", () => {
  const engine = engineWith();
  const WEATHER = { type: "object", properties: { city: { type: "string", maxLength: 12 } }, required: ["city"], additionalProperties: false };
  const tools: FunctionTool[] = [{ type: "function", function: { name: "get_weather", parameters: WEATHER } }];
  /** What the caller gets, less the call ids (fresh for every answer). */
  const outcome = ({ answer, done }: Awaited<ReturnType<typeof generate>>) => ({
    content: answer.content,
    reasoning: answer.reasoning,
    calls: answer.toolCalls.map((c) => c.function),
    finish: done.finish_reason,
  });

  it("the answer on a hit is the cold run's, for auto and required tool calls, a stop and parsed reasoning", async () => {
    const cases: Partial<GenerateRequest>[] = [
      { model: "caller", tools, tool_choice: "auto", temperature: 0.9, seed: 5, max_tokens: 80 },
      { tools, tool_choice: "required", temperature: 0.9, seed: 6, max_tokens: 80 },
      { stop: ["\n"], max_tokens: 40 },
      // nudged to open a think block (tokens 259 and 260 are <think> and </think>), as the engine's reasoning test does
      { model: "thinker", reasoning_format: "parsed", max_tokens: 40, temperature: 1, seed: 3, logit_bias: { "259": 30, "260": 10 }, frequency_penalty: 2 },
    ];
    const outcomes: ReturnType<typeof outcome>[] = [];
    for (const [i, controls] of cases.entries()) {
      const scope = String.fromCharCode(0x61 + i).repeat(64);
      const one = await generate(engine, first, { ...controls, cache_scope: scope });
      const second = next(first, one.text, `Case ${i}: the weather in Paris?`);
      const cold = await generate(engine, second, { ...controls, cache_scope: scope, cache_prompt: false });
      const hit = await generate(engine, second, { ...controls, cache_scope: scope });
      expect(hit.done.cached_tokens, `case ${i}`).toBeGreaterThan(0);
      expect(outcome(hit), `case ${i}`).toEqual(outcome(cold));
      outcomes.push(outcome(cold));
    }
    // the cases did what they are for: a forced call, a stop cut, a think block apart
    expect(outcomes[1]!.calls.length).toBeGreaterThan(0);
    expect(outcomes[2]!.finish).toBe("stop");
    expect(outcomes[3]!.reasoning).not.toBeNull();
  });
});

describe("DESIGN §9: scopes are apart", () => {
  const engine = engineWith();

  it("another scope with the same prompt starts cold; so does no scope; cache_prompt false reuses nothing", async () => {
    await generate(engine, first, { cache_scope: scopeA });
    expect((await generate(engine, first, { cache_scope: scopeB })).done.cached_tokens).toBe(0);
    expect((await generate(engine, first)).done.cached_tokens).toBe(0);
    expect((await generate(engine, first, { cache_scope: scopeA, cache_prompt: false })).done.cached_tokens).toBe(0);
    // neither the unscoped session nor the cache_prompt false one disturbed A's conversation
    expect((await generate(engine, first, { cache_scope: scopeA })).done.cached_tokens).toBeGreaterThan(0);
  });
});

describe("DESIGN §9: bounds", () => {
  it("a budget for no more than the working sequence keeps one conversation: a second scope evicts the first", async () => {
    const engine = engineWith({ promptCacheGb: 1e-9 });
    await generate(engine, first, { cache_scope: scopeA });
    expect((await generate(engine, first, { cache_scope: scopeA })).done.cached_tokens).toBeGreaterThan(0);
    await generate(engine, first, { cache_scope: scopeB });
    expect((await generate(engine, first, { cache_scope: scopeA })).done.cached_tokens).toBe(0);
  });

  it("--prompt-cache-gb 0 keeps nothing", async () => {
    const engine = engineWith({ promptCacheGb: 0 });
    await generate(engine, first, { cache_scope: scopeA });
    expect((await generate(engine, first, { cache_scope: scopeA })).done.cached_tokens).toBe(0);
  });

  it("a conversation past its TTL is gone, cleared by the engine without a next session", async () => {
    const engine = engineWith({ promptCacheTtlMs: 300 });
    await generate(engine, first, { cache_scope: scopeA });
    expect(engine.cachedConversations).toBe(1);
    await expect.poll(() => engine.cachedConversations, { timeout: 10_000 }).toBe(0);
    expect((await generate(engine, first, { cache_scope: scopeA })).done.cached_tokens).toBe(0);
  });
});

describe("DESIGN §9: the cache goes with the model", () => {
  it("when the model unloads after its keep-alive, the scope's next turn starts cold on the reloaded model", async () => {
    const engine = engineWith({ keepAliveMs: 300 });
    await generate(engine, first, { cache_scope: scopeA });
    expect(engine.cachedConversations).toBe(1);
    await expect.poll(() => engine.loadedAlias, { timeout: 10_000 }).toBeUndefined();
    expect((await generate(engine, first, { cache_scope: scopeA })).done.cached_tokens).toBe(0);
    expect(engine.loads).toBe(2);
  });

  it("when another model takes its place, and the first is loaded again, the scope's turn starts cold", async () => {
    const engine = engineWith();
    await generate(engine, first, { cache_scope: scopeA });
    await generate(engine, first, { model: "caller", cache_scope: scopeA });
    expect((await generate(engine, first, { cache_scope: scopeA })).done.cached_tokens).toBe(0);
    expect(engine.loads).toBe(3);
  });
});

describe("DESIGN §9: an aborted session leaves nothing a later hit could read", () => {
  const engine = engineWith();

  it("a turn aborted mid-answer, then the same turn: a hit on the earlier prefix, with the cold run's tokens", async () => {
    const one = await generate(engine, first, { cache_scope: scopeA });
    const second = next(first, one.text, "And the host?");
    const cold = await generate(engine, second, { cache_prompt: false });
    const aborter = new AbortController();
    let pieces = 0;
    const aborted = (async () => {
      for await (const event of engine.generate(askEngine({ messages: second, max_tokens: 24, temperature: 0, seed: 7, cache_scope: scopeA }), aborter.signal)) {
        if (event.type === "delta" && ++pieces === 3) aborter.abort(new Error("caller left"));
      }
    })();
    await expect(aborted).rejects.toThrow("caller left");
    const hit = await generate(engine, second, { cache_scope: scopeA });
    expect(hit.done.cached_tokens).toBeGreaterThan(0);
    expect(hit.text).toBe(cold.text);
    // exactly what the same two turns reuse in a scope that never aborted: nothing of the aborted answer counted
    await generate(engine, first, { cache_scope: scopeB });
    expect(hit.done.cached_tokens).toBe((await generate(engine, second, { cache_scope: scopeB })).done.cached_tokens);
  });

  it("a session that fails mid-answer (its consumer stops, as when the link to the gateway breaks) leaves nothing either", async () => {
    const [scopeC, scopeD] = ["c".repeat(64), "d".repeat(64)];
    const one = await generate(engine, first, { cache_scope: scopeC });
    const second = next(first, one.text, "And the timeout?");
    const cold = await generate(engine, second, { cache_prompt: false });
    let pieces = 0;
    for await (const event of engine.generate(askEngine({ messages: second, max_tokens: 24, temperature: 0, seed: 7, cache_scope: scopeC }))) {
      if (event.type === "delta" && ++pieces === 3) break;
    }
    expect(pieces).toBe(3);
    const hit = await generate(engine, second, { cache_scope: scopeC });
    expect(hit.text).toBe(cold.text);
    await generate(engine, first, { cache_scope: scopeD });
    expect(hit.done.cached_tokens).toBe((await generate(engine, second, { cache_scope: scopeD })).done.cached_tokens);
  });
});
