// Generated tokens into text deltas (agent/engine/answer/token-text.ts), on both paths: native detokenize calls against
// a fake byte-level tokenizer, and the byte table's streaming decoder. A character split across tokens comes out
// whole, and the deltas add up to the text.
import type { LlamaModel, Token } from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { ByteText, NativeText, TokenText, type TextOfTokens } from "../../../../../agent/engine/answer/token-text.ts";
import { ByteTable } from "../../../../../agent/engine/token-bytes.ts";

/** Token n is byte n; like SentencePiece, the first token of a decode loses a leading space. */
function fakeModel() {
  let calls = 0;
  const model = {
    detokenize(tokens: readonly Token[]) {
      calls++;
      return new TextDecoder().decode(Uint8Array.from(tokens)).replace(/^ /, "");
    },
    fileInfo: { metadata: {} },
  };
  return { model: model as unknown as LlamaModel, calls: () => calls };
}
const tokensOf = (text: string) => [...new TextEncoder().encode(text)] as Token[];
/** A byte table where token n is byte n. */
const BYTES = ByteTable.of(Array.from({ length: 256 }, (_, n) => Uint8Array.of(n)));

const paths: [string, () => TextOfTokens, (whole: string) => string][] = [
  ["native detokenize", () => new NativeText(fakeModel().model), (whole) => whole.replace(/^ /, "")],
  ["the byte table", () => new ByteText(BYTES), (whole) => whole],
];

describe.each(paths)("the deltas, from %s", (_, textOf, expected) => {
  it("never splits a UTF-8 character: its bytes are held until it is whole", () => {
    const text = textOf();
    expect(tokensOf("é😀").map((t) => text.push(t))).toEqual(["", "é", "", "", "", "😀"]);
  });

  it("each token comes after the ones before it (a space keeps its place), and the deltas add up to the text", () => {
    const text = textOf();
    const whole = " a b, naïve café — 😀 done. ".repeat(5);
    const pieces = tokensOf(whole).map((t) => text.push(t));
    expect(pieces.slice(1, 4)).toEqual(["a", " ", "b"]);
    expect(pieces.join("") + text.flush()).toBe(expected(whole));
  });

  it("flush returns what is held, once", () => {
    const text = textOf();
    expect([0xf0, 0x9f, 0x98].map((t) => text.push(t as Token))).toEqual(["", "", ""]);
    expect(text.flush()).toBe("\uFFFD");
    expect(text.flush()).toBe("");
  });
});

describe("native detokenize", () => {
  it("costs one decode per token, the trail's text reused (a fresh one only as its window slides)", () => {
    const { model, calls } = fakeModel();
    const text = new NativeText(model);
    for (const t of tokensOf("x".repeat(120))) text.push(t);
    expect(calls()).toBeLessThan(120 * 1.2);
  });

  it("a stray byte past four tokens is real output", () => {
    const text = new NativeText(fakeModel().model);
    expect([0xf0, 0x9f, 0x98, 0xf0].map((t) => text.push(t as Token))).toEqual(["", "", "", "\uFFFD\uFFFD"]);
  });
});

describe("the byte table", () => {
  it("reads invalid bytes as one decode of the whole answer does: a cut character is one U+FFFD, and what follows is whole", () => {
    const text = new ByteText(BYTES);
    const tokens = [0xf0, 0x9f, 0x98, ...tokensOf("😀")] as Token[];
    expect(tokens.map((t) => text.push(t)).join("") + text.flush()).toBe("\uFFFD😀");
  });
});

describe("TokenText", () => {
  it("a model whose vocabulary gives no byte table is decoded natively", () => {
    const { model, calls } = fakeModel();
    const text = new TokenText(model);
    expect(tokensOf("hé").map((t) => text.push(t))).toEqual(["h", "", "é"]);
    expect(calls()).toBeGreaterThan(0);
  });

  it("the byte table keeps a byte order mark the answer starts with, as llama.cpp's decode does", () => {
    const text = new ByteText(BYTES);
    expect(tokensOf("\uFEFFhi").map((t) => text.push(t)).join("") + text.flush()).toBe("\uFEFFhi");
  });

  it("the byte table refuses a token outside the vocabulary, as llama.cpp's decode does", () => {
    expect(() => new ByteText(BYTES).push(256 as Token)).toThrow(RangeError);
  });
});
