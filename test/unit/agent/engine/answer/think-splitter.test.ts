// Reasoning split (agent/engine/answer/think-splitter.ts): Qwen3's `<think>\n…\n</think>\n\n` shape, whole and streamed, and the
// no-think prompt that makes it unnecessary.
import fc from "fast-check";
import { QwenChatWrapper } from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { splitThink, ThinkSplitter, type ThinkOptions, type ThinkSplit } from "../../../../../agent/engine/answer/think-splitter.ts";

function streamed(pieces: string[], options?: ThinkOptions): ThinkSplit {
  const splitter = new ThinkSplitter(options);
  const out = [...pieces.flatMap((p) => splitter.push(p)), ...splitter.end()];
  for (const piece of out) expect(piece.text).not.toBe("");
  const join = (kind: string) => out.filter((p) => p.kind === kind).map((p) => p.text).join("");
  // reasoning pieces all come before content pieces
  const firstContent = out.findIndex((p) => p.kind === "content");
  if (firstContent >= 0) expect(firstContent).toBeGreaterThan(out.findLastIndex((p) => p.kind === "reasoning"));
  return { reasoning: splitter.hadReasoning ? join("reasoning") : null, content: join("content") };
}

const CASES: [string, ThinkSplit, ThinkOptions?][] = [
  ["<think>\nLet me see.\n</think>\n\nThe answer.", { reasoning: "Let me see.", content: "The answer." }],
  ["<think>\n\n</think>\n\nHi", { reasoning: "", content: "Hi" }],
  ["<think>\nline 1\n\nline 2\n\n\n</think>\n\n\nA\n\nB\n", { reasoning: "line 1\n\nline 2", content: "A\n\nB\n" }],
  ["Just an answer\n", { reasoning: null, content: "Just an answer\n" }],
  ["\n\n  Answer <think> later", { reasoning: null, content: "\n\n  Answer <think> later" }],
  ["  <think>x</think>y", { reasoning: "x", content: "y" }],
  ["<thinker>", { reasoning: null, content: "<thinker>" }],
  ["<thi", { reasoning: null, content: "<thi" }],
  ["<think>\nunfinished thought\n\n", { reasoning: "unfinished thought", content: "" }],
  ["<think>\nalmost </thi", { reasoning: "almost </thi", content: "" }],
  ["<think>a</think>b</think><think>c", { reasoning: "a", content: "b</think><think>c" }],
  ["forced open\n</think>\n\nafter", { reasoning: "forced open", content: "after" }, { startInReasoning: true }],
  ["never closed", { reasoning: "never closed", content: "" }, { startInReasoning: true }],
];

describe("splitThink (whole text)", () => {
  it.each(CASES)("%j", (text, expected, options) => {
    expect(splitThink(text, options)).toEqual(expected);
  });
});

describe("ThinkSplitter (streamed)", () => {
  it.each(CASES)("%j: every split point and one character at a time give the whole-text result", (text, expected, options) => {
    for (let cut = 0; cut <= text.length; cut++) expect(streamed([text.slice(0, cut), text.slice(cut)], options), `cut ${cut}`).toEqual(expected);
    expect(streamed([...text], options)).toEqual(expected);
  });

  it("property: any text over tag-heavy pieces, split anywhere, agrees with the whole-text form", () => {
    const unit = fc.constantFrom("<think>", "</think>", "<think", "</thi", "<", "/", ">", "\n", "\n\n", " ", "a", "b.");
    const text = fc.array(unit, { maxLength: 14 }).map((u) => u.join(""));
    fc.assert(
      fc.property(text, fc.array(fc.nat(), { maxLength: 6 }), fc.boolean(), (source, cuts, startInReasoning) => {
        const points = [...new Set(cuts.map((c) => c % (source.length + 1)))].sort((a, b) => a - b);
        const pieces = [0, ...points].map((p, i, all) => source.slice(p, all[i + 1] ?? source.length));
        expect(streamed(pieces, { startInReasoning })).toEqual(splitThink(source, { startInReasoning }));
      }),
      { numRuns: 1000 },
    );
  });

  it("property: Qwen3's shape round-trips: reasoning and content come back as written", () => {
    // reasoning and content without edge newlines or tags, as the template would read them back
    const body = fc.string({ unit: fc.constantFrom("a", "b", " ", "\n", "<", "/", ">"), maxLength: 20 })
      .filter((s) => !s.includes("</think>") && !/^\n|\n$/.test(s));
    fc.assert(
      fc.property(body, body, fc.array(fc.nat(), { maxLength: 5 }), (reasoning, content, cuts) => {
        const source = `<think>\n${reasoning}\n</think>\n\n${content}`;
        const points = [...new Set(cuts.map((c) => c % (source.length + 1)))].sort((a, b) => a - b);
        const pieces = [0, ...points].map((p, i, all) => source.slice(p, all[i + 1] ?? source.length));
        expect(streamed(pieces)).toEqual({ reasoning, content });
      }),
      { numRuns: 500 },
    );
  });
});

describe("the no-think prompt", () => {
  it("QwenChatWrapper thoughts:'discourage' ends the prompt with an empty think block, as enable_thinking=false does", () => {
    const history = [{ type: "user" as const, text: "Why?" }, { type: "model" as const, response: [] }];
    const text = new QwenChatWrapper({ thoughts: "discourage" }).generateContextState({ chatHistory: history }).contextText.toString();
    expect(text).toBe("<|im_start|>user\nWhy?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
    // what the model writes next is content; a stray think block would still be split off
    expect(splitThink("Because.")).toEqual({ reasoning: null, content: "Because." });
  });
});
