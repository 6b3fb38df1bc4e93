// Generated tokens into text on real llama.cpp (agent/engine/answer/token-text.ts, agent/engine/token-bytes.ts): the
// tiny qwen3 model's byte-level vocabulary decodes from a per-token byte table through one streaming UTF-8 decoder,
// and what it writes is llama.cpp's own detokenize of the same tokens, for any sequence of byte, control and
// user-defined tokens, with no character ever split across deltas.
import fc from "fast-check";
import type { Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ByteText, NativeText, TokenText, type TextOfTokens } from "../../../../../agent/engine/answer/token-text.ts";
import { textBytes, type ByteTable } from "../../../../../agent/engine/token-bytes.ts";
import { TINY_SPECIAL_TOKENS, TINY_TOOL_TOKENS } from "../../../../../tiny-model/gguf.ts";
import { loadTinyLlama, type TinyLlama } from "../../../../fixtures/tiny-llama.ts";

let tiny: TinyLlama;
let bytes: ByteTable;
let specials: Token[];
beforeAll(async () => {
  tiny = await loadTinyLlama({ toolTags: true, thinkTags: true });
  bytes = textBytes(tiny.model)!;
  specials = [...TINY_SPECIAL_TOKENS, ...TINY_TOOL_TOKENS].map((text) => tiny.model.tokenize(text, true)).map(([token]) => token!);
});
afterAll(async () => {
  await tiny.dispose();
});

const deltas = (text: TextOfTokens, tokens: readonly Token[]) => [...tokens.map((t) => text.push(t)), text.flush()];
/** The tiny vocabulary's first 256 tokens are the bytes, in byte order. */
const byteTokens = (text: string) => [...Buffer.from(text)] as Token[];
/** Text whose characters take 1–4 bytes, so most of them split across byte tokens. */
const text = fc.string({ unit: "binary", maxLength: 12 }).filter((s) => Buffer.from(s).toString() === s && !s.includes("\uFFFD")); // no lone surrogate
const special = () => fc.constantFrom(...specials);

describe("each token's bytes in the answer's text", () => {
  it("the tiny vocabulary's detokenize is provably its tokens' bytes one after another", () => {
    expect(bytes).toBeDefined();
    expect(bytes.size).toBe(256 + specials.length);
  });

  it("every token's bytes are llama.cpp's text for it: control tokens none, user-defined their text", () => {
    const decode = (b: Uint8Array) => new TextDecoder().decode(b);
    for (let t = 0; t < bytes.size; t++) expect(decode(bytes.get(t)!), `token ${t}`).toBe(tiny.model.detokenize([t as Token]));
    const byText = Object.fromEntries([...TINY_SPECIAL_TOKENS, ...TINY_TOOL_TOKENS].map((s, i) => [s, decode(bytes.get(specials[i]!)!)]));
    expect(byText).toEqual({
      "<|endoftext|>": "",
      "<|im_start|>": "",
      "<|im_end|>": "",
      "<think>": "<think>",
      "</think>": "</think>",
      "<tool_call>": "<tool_call>",
      "</tool_call>": "</tool_call>",
    });
  });
});

describe("the deltas from the byte table", () => {
  it("any sequence (stray, split and invalid bytes, specials, ending mid-character) adds up to llama.cpp's detokenize of it", () => {
    const piece = fc.oneof(
      text.map(byteTokens),
      fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 4 }).map((b) => b as Token[]),
      special().map((t) => [t]),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 24 }), (pieces) => {
        const tokens = pieces.flat();
        expect(deltas(new ByteText(bytes), tokens).join("")).toBe(tiny.model.detokenize(tokens));
      }),
      { numRuns: 2000 },
    );
  });

  /** After each token, all of the text so far but a character still partial (where llama.cpp writes U+FFFD). */
  const wholeSoFar = (fast: string[], tokens: readonly Token[]) => {
    for (let k = 1; k <= tokens.length; k++) expect(fast.slice(0, k).join("")).toBe(tiny.model.detokenize(tokens.slice(0, k)).replace(/\uFFFD$/, ""));
  };

  it("valid text with specials between characters: each delta is the text as far as it is whole, the native path's delta by delta", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(text.map(byteTokens), special().map((t) => [t])), { maxLength: 24 }), (pieces) => {
        const tokens = pieces.flat();
        const fast = deltas(new ByteText(bytes), tokens);
        expect(fast).toEqual(deltas(new NativeText(tiny.model), tokens));
        expect(fast.join("")).toBe(tiny.model.detokenize(tokens));
        expect(fast.join("")).not.toContain("\uFFFD");
        wholeSoFar(fast, tokens);
      }),
      { numRuns: 500 },
    );
  });

  it("a control token inside a character writes nothing and does not split it (the native path's four-token hold would cut a 4-byte one)", () => {
    const control = specials.filter((t) => bytes.get(t)!.length === 0);
    const splitByControl = fc.tuple(text, fc.nat(), fc.constantFrom(...control)).map(([s, at, t]) => {
      const tokens = byteTokens(s);
      tokens.splice(at % (tokens.length + 1), 0, t);
      return tokens;
    });
    fc.assert(
      fc.property(fc.array(splitByControl, { maxLength: 12 }), (pieces) => {
        const tokens = pieces.flat();
        const fast = deltas(new ByteText(bytes), tokens);
        expect(fast.join("")).toBe(tiny.model.detokenize(tokens));
        expect(fast.join("")).not.toContain("\uFFFD");
        wholeSoFar(fast, tokens);
      }),
      { numRuns: 500 },
    );
  });

  it("TokenText takes the byte table for the tiny model: an emoji split over four tokens is one delta, and flush ends a cut character as U+FFFD", () => {
    const native = vi.spyOn(tiny.model, "detokenize");
    const answer = new TokenText(tiny.model);
    const emoji = byteTokens("😀");
    expect([...emoji, ...byteTokens("é")].map((t) => answer.push(t))).toEqual(["", "", "", "😀", "", "é"]);
    expect(answer.push(emoji[0]!)).toBe("");
    expect(answer.flush()).toBe("\uFFFD");
    expect(answer.flush()).toBe("");
    expect(native).not.toHaveBeenCalled();
    native.mockRestore();
  });
});
