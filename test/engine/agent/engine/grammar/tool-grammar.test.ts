// Forced Qwen3 tool calls (agent/engine/grammar/tool-grammar.ts): the composed grammar, sampled from the tiny random model at
// temperature 1, yields only well-formed calls to allowed tools whose arguments validate against their schemas.
import { LlamaGrammarEvaluationState, TokenBias, type Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { validate } from "../../../../../src/schema/validate.ts";
import {
  composeToolCallBodyGrammar,
  composeToolCallGrammar,
  forcedTools,
  prefixRules,
  toolArgsGbnf,
  type GrammarTool,
} from "../../../../../agent/engine/grammar/tool-grammar.ts";
import { TOOL_CALL_OPEN } from "../../../../../agent/engine/qwen3-markup.ts";
import { generate, loadTinyLlama, userPrompt, type TinyLlama } from "../../../../fixtures/tiny-llama.ts";

const SEEDS = [1, 2, 3, 4];
const TOOLS: GrammarTool[] = [
  { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string", maxLength: 12 }, unit: { enum: ["c", "f"] } }, required: ["city"] } },
  { name: "get_time", parameters: { type: "object", properties: { tz: { type: "string", maxLength: 10 }, hours: { type: "integer" } } } },
  { name: "ping" }, // no parameters: arguments must be {}
];
const FUNCTIONS = Object.fromEntries(TOOLS.map((t) => [t.name, { params: t.parameters as never }]));

/** Reads `<tool_call>\n{…}\n</tool_call>` blocks joined by "\n" (after an optional think block); throws on anything else. */
function readCalls(text: string): { think?: string; calls: { name: string; arguments: unknown }[] } {
  let rest = text;
  let think: string | undefined;
  const thinkMatch = /^<think>\n([\s\S]*?)<\/think>\n\n/.exec(rest);
  if (thinkMatch) [think, rest] = [thinkMatch[1], rest.slice(thinkMatch[0].length)];
  const calls = [];
  for (let first = true; rest !== "" || first; first = false) {
    const open = `${first ? "" : "\n"}${TOOL_CALL_OPEN}\n`;
    if (!rest.startsWith(open)) throw new Error(`expected a call at ${JSON.stringify(rest.slice(0, 40))}`);
    rest = rest.slice(open.length);
    // the first "}\n</tool_call>" after which the JSON parses ends the call
    let end = -1;
    let parsed: { name: string; arguments: unknown } | undefined;
    while (parsed === undefined) {
      end = rest.indexOf("\n</tool_call>", end + 1);
      if (end < 0) throw new Error(`unterminated call: ${JSON.stringify(rest.slice(0, 80))}`);
      try {
        parsed = JSON.parse(rest.slice(0, end));
      } catch {
        /* the close tag was inside a string: look further */
      }
    }
    expect(Object.keys(parsed!)).toEqual(["name", "arguments"]);
    calls.push(parsed!);
    rest = rest.slice(end + "\n</tool_call>".length);
  }
  return { think, calls };
}

function expectValidCalls(calls: { name: string; arguments: unknown }[], allowed: GrammarTool[]) {
  for (const call of calls) {
    const tool = allowed.find((t) => t.name === call.name);
    expect(tool, call.name).toBeDefined();
    expect(validate(call.arguments, tool!.parameters ?? { type: "object", additionalProperties: false }), JSON.stringify(call)).toEqual([]);
  }
}

describe("composing the grammar (no model)", () => {
  it("prefixes rule names, never text inside literals or classes", () => {
    const gbnf = 'root ::= "root" rule0 [root]\nrule0 ::= "\\"rule0\\"" root';
    expect(prefixRules(gbnf, "t0-")).toBe('t0-root ::= "root" t0-rule0 [root]\nt0-rule0 ::= "\\"rule0\\"" t0-root');
  });

  it("shapes the forced turn by parallel_tool_calls and allowThink", () => {
    const tools = [{ name: "a", gbnf: 'root ::= "{}"' }];
    expect(composeToolCallGrammar(tools).split("\n")[0]).toBe('root ::= call ( "\\n" call )*');
    expect(composeToolCallGrammar(tools, { parallel: false }).split("\n")[0]).toBe("root ::= call");
    expect(composeToolCallGrammar(tools, { allowThink: true }).split("\n")[0]).toBe('root ::= think? call ( "\\n" call )*');
    expect(composeToolCallGrammar([{ name: 'q"x', gbnf: 'root ::= "{}"' }])).toContain('"{\\"name\\": \\"q\\\\\\"x\\", \\"arguments\\": " t0-root');
  });

  it("a named tool_choice picks exactly that tool, one call", () => {
    expect(forcedTools(TOOLS, { name: "get_time" })).toEqual({ tools: [TOOLS[1]], parallel: false });
    expect(forcedTools(TOOLS, "required").tools).toHaveLength(3);
    expect(() => forcedTools(TOOLS, { name: "nope" })).toThrow("not among the tools");
  });
});

describe("forced tool calls on the tiny model", () => {
  let tiny: TinyLlama;
  let prompt: Token[];
  beforeAll(async () => {
    tiny = await loadTinyLlama();
    prompt = userPrompt(tiny.model, "Weather and time in Paris?", FUNCTIONS);
  });
  afterAll(async () => tiny?.dispose());

  async function run(gbnf: string, seed: number, extra: { tokenBias?: () => TokenBias; lazyFrom?: string } = {}) {
    const grammar = await tiny.llama.createGrammar({ grammar: gbnf });
    let state: LlamaGrammarEvaluationState | undefined = extra.lazyFrom ? undefined : new LlamaGrammarEvaluationState({ model: tiny.model, grammar });
    let text = "";
    const out = await generate(tiny, prompt, { temperature: 1, seed, tokenBias: extra.tokenBias, grammarEvaluationState: () => state }, {
      maxTokens: 800,
      onToken: (token) => {
        text += tiny.model.detokenize([token]);
        if (!state && extra.lazyFrom && text.endsWith(extra.lazyFrom)) state = new LlamaGrammarEvaluationState({ model: tiny.model, grammar });
      },
    });
    expect(out.eog, `seed ${seed} ran out of tokens: ${JSON.stringify(out.text.slice(-80))}`).toBe(true); // a finished grammar allows only EOG
    return out.text;
  }

  it("tool_choice required: one or more calls, each to an allowed tool with valid arguments", async () => {
    const gbnf = composeToolCallGrammar(await toolArgsGbnf(tiny.llama, TOOLS));
    const counts = [];
    for (const seed of SEEDS) {
      const { calls } = readCalls(await run(gbnf, seed));
      expect(calls.length).toBeGreaterThanOrEqual(1);
      expectValidCalls(calls, TOOLS);
      counts.push(calls.length);
    }
    expect(Math.max(...counts), "random weights should pick parallel calls at least once").toBeGreaterThan(1);
  });

  it("parallel_tool_calls false: exactly one call", async () => {
    const gbnf = composeToolCallGrammar(await toolArgsGbnf(tiny.llama, TOOLS), { parallel: false });
    for (const seed of SEEDS) {
      const { calls } = readCalls(await run(gbnf, seed));
      expect(calls).toHaveLength(1);
      expectValidCalls(calls, TOOLS);
    }
  });

  it("a named function: exactly one call, to that function", async () => {
    const { tools, parallel } = forcedTools(TOOLS, { name: "get_time" });
    const gbnf = composeToolCallGrammar(await toolArgsGbnf(tiny.llama, tools), { parallel });
    for (const seed of SEEDS) {
      const { calls } = readCalls(await run(gbnf, seed));
      expect(calls.map((c) => c.name)).toEqual(["get_time"]);
      expectValidCalls(calls, tools);
    }
  });

  it("tools whose parameters use bounds, formats and patterns (svc's own rules): each tool's rules keep to its prefix", async () => {
    // both tools' rules are named svcgbnf0…, and the composed grammar renames them t0-…, t1-…
    const ruled: GrammarTool[] = [
      { name: "book", parameters: z.toJSONSchema(z.object({ n: z.number().int().min(1).max(12), email: z.email(), at: z.iso.datetime() })) },
      { name: "tag", parameters: z.toJSONSchema(z.object({ code: z.string().regex(/^[A-Z]{2}-\d{2}$/), ref: z.uuid(), n: z.number().int() })) },
    ];
    const gbnf = composeToolCallGrammar(await toolArgsGbnf(tiny.llama, ruled));
    expect(gbnf).toMatch(/^t0-svcgbnf0 ::= /m);
    expect(gbnf).toMatch(/^t1-svcgbnf0 ::= /m);
    for (const seed of SEEDS) {
      const { calls } = readCalls(await run(gbnf, seed));
      expectValidCalls(calls, ruled);
    }
  });

  it("tool_choice auto: the body grammar takes over once the model wrote <tool_call> itself", async () => {
    const gbnf = composeToolCallBodyGrammar(await toolArgsGbnf(tiny.llama, TOOLS));
    // script "Sure.\n<tool_call>" with a per-step bias, standing in for a real model's choice to call
    const script = tiny.model.tokenize(`Sure.\n${TOOL_CALL_OPEN}`, false);
    for (const seed of SEEDS) {
      let step = 0;
      const tokenBias = () => {
        const bias = new TokenBias(tiny.model.tokenizer);
        const next = script[step++];
        return next === undefined ? bias : bias.set(next, { logit: 100 });
      };
      const text = await run(gbnf, seed, { tokenBias, lazyFrom: TOOL_CALL_OPEN });
      expect(text.startsWith("Sure.\n")).toBe(true);
      const { calls } = readCalls(text.slice("Sure.\n".length));
      expectValidCalls(calls, TOOLS);
    }
  });
});

describe("a think block before a forced call (reasoning on)", () => {
  let tiny: TinyLlama;
  beforeAll(async () => {
    tiny = await loadTinyLlama({ thinkTags: true });
  });
  afterAll(async () => tiny?.dispose());

  it("the model may think first; the calls after it are still valid", async () => {
    const gbnf = composeToolCallGrammar(await toolArgsGbnf(tiny.llama, TOOLS), { parallel: false, allowThink: true });
    const grammar = await tiny.llama.createGrammar({ grammar: gbnf });
    // the thinking prompt: no empty think block pre-filled
    const { QwenChatWrapper } = await import("node-llama-cpp");
    const history = [{ type: "user" as const, text: "Weather?" }, { type: "model" as const, response: [] }];
    const prompt = new QwenChatWrapper().generateContextState({ chatHistory: history, availableFunctions: FUNCTIONS }).contextText.tokenize(tiny.model.tokenizer);
    let thought = 0;
    for (const seed of SEEDS) {
      const out = await generate(tiny, prompt, { temperature: 1, seed, grammarEvaluationState: new LlamaGrammarEvaluationState({ model: tiny.model, grammar }) }, { maxTokens: 800 });
      expect(out.eog).toBe(true);
      const { think, calls } = readCalls(out.text);
      if (think !== undefined) thought++;
      expect(calls).toHaveLength(1);
      expectValidCalls(calls, TOOLS);
    }
    expect(thought, "the think-tag model should think at least once").toBeGreaterThan(0);
  });
});
