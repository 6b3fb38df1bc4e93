// Generated text to OpenAI tool calls (agent/engine/answer/tool-calls.ts), whole and streamed, and the special-token ban
// (agent/engine/special-tokens.ts) that keeps `<think>` out of grammar-constrained arguments.
import fc from "fast-check";
import { LlamaGrammarEvaluationState, TokenBias, type Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validate } from "../../../../../src/schema/validate.ts";
import { argumentTokenBan, singleToken } from "../../../../../agent/engine/special-tokens.ts";
import { parseToolCalls, ToolCallStream, type ParsedToolCalls } from "../../../../../agent/engine/answer/tool-calls.ts";
import { AnswerRecord, type AnswerPiece } from "../../../../../src/receipt/answer-record.ts";
import { composeToolCallGrammar, toolArgsGbnf } from "../../../../../agent/engine/grammar/tool-grammar.ts";
import { generate, loadTinyLlama, userPrompt, type TinyLlama } from "../../../../fixtures/tiny-llama.ts";

const ids = () => {
  let n = 0;
  return () => `call_${n++}`;
};
const call = (name: string, args: string) => `<tool_call>\n{"name": "${name}", "arguments": ${args}}\n</tool_call>`;
const fn = (i: number, name: string, args: string) => ({ id: `call_${i}`, type: "function", function: { name, arguments: args } });

/** [text, content, calls as [name, arguments], problems count] */
const CASES: [string, string | null, [string, string][], number][] = [
  [`Sure.\n${call("get_weather", '{"city": "Paris"}')}`, "Sure.", [["get_weather", '{"city": "Paris"}']], 0],
  [`${call("a", "{}")}\n${call("b", '{"x": [1, {"y": null}]}')}`, null, [["a", "{}"], ["b", '{"x": [1, {"y": null}]}']], 0],
  ["Hello there  \n", "Hello there  \n", [], 0],
  ["a <tool b <tool_cal", "a <tool b <tool_cal", [], 0],
  [`\n\n${call("q", '{"s": "}\\n</tool_call> {\\"x\\": [1]}"}')}\n\n`, null, [["q", '{"s": "}\\n</tool_call> {\\"x\\": [1]}"}']], 0],
  [call("n", "5"), null, [["n", "5"]], 0],
  [call("s", '"text"'), null, [["s", '"text"']], 0],
  ['<tool_call>\n{ "name" : "w" ,\n "arguments" :{"k":true} }\n</tool_call>', null, [["w", '{"k":true}']], 0],
  [`A\n${call("f", "{}")}\nDone.`, "A\nDone.", [["f", "{}"]], 0],
  [`${call("f", "{}")} then more`, "then more", [["f", "{}"]], 0],
  ['<tool_call>\n{"name": "na\\"me", "arguments": {}}\n</tool_call>', null, [['na"me', "{}"]], 0],
  ['<tool_call>\n{"arguments": {"a": 1}, "name": "late"}\n</tool_call>', null, [["late", '{"a":1}']], 0],
  ["<tool_call>\nnot json\n</tool_call>", "", [], 1],
  [`x${call("bad", "{\"a\": tru}")}`, "x", [["bad", '{"a": tru}']], 1],
  ['<tool_call>\n{"name": "f", "arguments": {}, "extra": 1}\n</tool_call>', null, [["f", "{}"]], 1],
  // cut short (max_tokens): the call's pieces so far were sent, so the answer holds it as far as it got
  ['Hi <tool_call>\n{"name": "f", "arguments": {"a": ', "Hi", [["f", '{"a": ']], 1],
];

/** Feeds `pieces` to a stream and folds its answer pieces as both ends do, checking the piece protocol on the way. */
function streamed(pieces: string[]): ParsedToolCalls & { events: AnswerPiece[] } {
  const stream = new ToolCallStream({ newId: ids() });
  const events = [...pieces.flatMap((p) => stream.push(p)), ...stream.end()];
  const answer = new AnswerRecord();
  for (const e of events) {
    if (e.type === "delta") expect(e.text).not.toBe("");
    expect(e.type, "the parser gives content and calls, never reasoning").not.toBe("reasoning");
    answer.add(e); // throws on a call begun out of order, or arguments before their call
  }
  return { events, content: answer.messageContent, toolCalls: answer.toolCalls, problems: stream.problems };
}

const splitAt = (text: string, cuts: number[]) => {
  const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
  return [0, ...points].map((p, i, all) => text.slice(p, all[i + 1] ?? text.length));
};

describe("parseToolCalls (whole text)", () => {
  it.each(CASES)("%j", (text, content, calls, problems) => {
    const parsed = parseToolCalls(text, { newId: ids() });
    expect(parsed.content).toBe(content);
    expect(parsed.toolCalls).toEqual(calls.map(([name, args], i) => fn(i, name, args)));
    expect(parsed.problems).toHaveLength(problems);
  });

  it("gives OpenAI-style ids by default", () => {
    const { toolCalls } = parseToolCalls(`${call("a", "{}")}\n${call("b", "{}")}`);
    expect(toolCalls.map((c) => c.id)).toEqual([expect.stringMatching(/^call_[A-Za-z0-9]{24}$/), expect.stringMatching(/^call_[A-Za-z0-9]{24}$/)]);
    expect(toolCalls[0]!.id).not.toBe(toolCalls[1]!.id);
  });
});

describe("ToolCallStream", () => {
  it.each(CASES)("%j: every split point, and one character at a time, gives the whole-text result", (text) => {
    const whole = parseToolCalls(text, { newId: ids() });
    for (let cut = 0; cut <= text.length; cut++) {
      const { events: _, ...got } = streamed([text.slice(0, cut), text.slice(cut)]);
      expect(got, `cut at ${cut}`).toEqual(whole);
    }
    const { events: _, ...byChar } = streamed([...text]);
    expect(byChar).toEqual(whole);
  });

  it("property: content and calls in any mix, split anywhere, come back exactly; content never holds markup", () => {
    const text = fc.string({ unit: fc.constantFrom("a", " ", "\n", "\u00a0", "<", "t", "o", "l", "_", "c", "/", ">", "{", '"'), maxLength: 12 }).filter((t) => !t.includes("<tool_call>"));
    const args = fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v));
    const part = fc.oneof(text.map((t) => ({ text: t })), fc.record({ name: fc.constantFrom("a", "get_weather", "x\"y"), args }));
    fc.assert(
      fc.property(fc.array(part, { maxLength: 5 }), fc.array(fc.nat(), { maxLength: 6 }), (parts, cuts) => {
        const source = parts.map((p) => ("text" in p ? p.text : call(JSON.stringify(p.name).slice(1, -1), p.args))).join("");
        const whole = parseToolCalls(source, { newId: ids() });
        const { events, ...got } = streamed(splitAt(source, cuts));
        expect(got).toEqual(whole);
        const expected = parts.flatMap((p) => ("text" in p ? [] : [[p.name, p.args]]));
        expect(whole.toolCalls.map((c) => [c.function.name, c.function.arguments])).toEqual(expected);
        expect(whole.problems).toEqual([]);
        for (const e of events) if (e.type === "delta") expect(e.text).not.toContain("<tool_call>");
        if (expected.length === 0) expect(whole.content).toBe(source); // no calls: the text is untouched
      }),
      { numRuns: 400 },
    );
  });

  it("insideCall covers the head and arguments, not the closing tag", () => {
    const stream = new ToolCallStream({ newId: ids() });
    const seen: boolean[] = [];
    for (const ch of `ok ${call("f", '{"a": 1}')}`) {
      stream.push(ch);
      seen.push(stream.insideCall);
    }
    const text = `ok ${call("f", '{"a": 1}')}`;
    expect(seen[text.indexOf("<tool_call>") + "<tool_call>".length - 1]).toBe(true);
    expect(seen[text.indexOf('{"a"') + 2]).toBe(true);
    expect(seen[text.indexOf("1}") + 1]).toBe(false); // arguments done: "}\n</tool_call>" may use the special token
    expect(seen.at(-1)).toBe(false);
  });
});

describe("on the tiny model with the forced grammar and the special-token ban", () => {
  let tiny: TinyLlama;
  beforeAll(async () => {
    tiny = await loadTinyLlama({ thinkTags: true });
  });
  afterAll(async () => tiny?.dispose());

  it("lists the think tags among the tokens to ban, and no end-of-generation token", () => {
    const ban = argumentTokenBan(tiny.model);
    const think = singleToken(tiny.model, "<think>")!;
    const close = singleToken(tiny.model, "</think>")!;
    expect(ban).toEqual(expect.arrayContaining([think, close, singleToken(tiny.model, "<|im_start|>")!]));
    expect(ban.some((t) => tiny.model.isEogToken(t))).toBe(false);
    expect(singleToken(tiny.model, "<tool_call>")).toBeUndefined(); // plain text in the tiny vocabulary
  });

  it("streamed calls validate, match the whole-text parse, and carry no think tags once banned", async () => {
    const tools = [{ name: "get_weather", parameters: { type: "object", properties: { city: { type: "string", maxLength: 16 } }, required: ["city"] } }];
    const grammar = await tiny.llama.createGrammar({ grammar: composeToolCallGrammar(await toolArgsGbnf(tiny.llama, tools)) });
    const prompt = userPrompt(tiny.model, "Weather?", { get_weather: { params: tools[0]!.parameters as never } });
    const tags = [singleToken(tiny.model, "<think>")!, singleToken(tiny.model, "</think>")!];
    const banned = new TokenBias(tiny.model.tokenizer);
    for (const t of argumentTokenBan(tiny.model)) banned.set(t, "never");
    const open = new TokenBias(tiny.model.tokenizer);
    const leaks = { ban: 0, none: 0 };
    for (const ban of [false, true]) {
      for (const seed of [1, 2, 3, 4, 5, 6]) {
        const stream = new ToolCallStream({ newId: ids() });
        const answer = new AnswerRecord();
        const sampled: Token[] = [];
        const out = await generate(tiny, prompt, {
          temperature: 1, seed,
          grammarEvaluationState: new LlamaGrammarEvaluationState({ model: tiny.model, grammar }),
          tokenBias: () => (ban && stream.insideCall ? banned : open),
        }, { maxTokens: 2000, onToken: (t) => (sampled.push(t), stream.push(tiny.model.detokenize([t])).forEach((p) => answer.add(p))) });
        stream.end().forEach((p) => answer.add(p));
        expect(out.eog, `ban ${ban} seed ${seed}: ${JSON.stringify(out.text)}`).toBe(true);
        if (sampled.some((t) => tags.includes(t))) leaks[ban ? "ban" : "none"]++;
        const whole = parseToolCalls(out.text, { newId: ids() });
        expect(stream.problems).toEqual([]);
        expect(answer.toolCalls).toEqual(whole.toolCalls);
        expect(whole.content).toBeNull();
        for (const c of whole.toolCalls) expect(validate(JSON.parse(c.function.arguments), tools[0]!.parameters), c.function.arguments).toEqual([]);
      }
    }
    expect(leaks.none, "without the ban the think-tag model writes tags into arguments").toBeGreaterThan(0);
    expect(leaks.ban).toBe(0);
  });
});
