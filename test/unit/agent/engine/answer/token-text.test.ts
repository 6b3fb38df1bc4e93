// Generated tokens into text deltas (agent/engine/answer/token-text.ts), on both paths: native detokenize calls against
// a fake byte-level tokenizer, and the byte table's streaming decoder. A character split across tokens comes out
// whole, and the deltas add up to the text.
import type { LlamaModel, Token } from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { ByteText, HeldBytes, NativeText, TokenText, type TextOfTokens } from "../../../../../agent/engine/answer/token-text.ts";
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

  it("a token that is whole characters is its own text only while no character is held: after a cut one, the decoder reads it", () => {
    const table = ByteTable.of([Uint8Array.of(0xe2, 0x82), Uint8Array.of(0xac), new TextEncoder().encode("€"), Uint8Array.of(0xac, 0x41)]);
    const text = new ByteText(table);
    expect([2, 0, 1, 0, 2, 0, 3, 2].map((t) => text.push(t as Token))).toEqual(["€", "", "€", "", "\uFFFD€", "", "€A", "€"]);
  });

  it("the byte table refuses a token outside the vocabulary, as llama.cpp's decode does", () => {
    expect(() => new ByteText(BYTES).push(256 as Token)).toThrow(RangeError);
  });
});

/** Bytes where UTF-8's rules turn: leads, continuation bounds (E0, ED, F0, F4 narrow them), and bytes never valid. */
const EDGES = [0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xed, 0xef, 0xf0, 0xf3, 0xf4, 0xf5, 0xff];

describe("HeldBytes", () => {
  it("says whether a streaming TextDecoder holds bytes, after every byte of 500 random sequences of UTF-8's edge bytes", () => {
    let seed = 7;
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let run = 0; run < 500; run++) {
      const bytes = Array.from({ length: 1 + random(12) }, () => EDGES[random(EDGES.length)]!);
      const held = new HeldBytes();
      bytes.forEach((byte, i) => {
        held.push(Uint8Array.of(byte));
        const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
        decoder.decode(Uint8Array.from(bytes.slice(0, i + 1)), { stream: true });
        expect(held.any, bytes.slice(0, i + 1).map((b) => b.toString(16)).join(" ")).toBe(decoder.decode() !== "");
      });
    }
  });

  it("the byte table's deltas add up to one decode of all the bytes, tokens of one byte and of whole characters mixed", () => {
    const pieces = [...EDGES.map((b) => Uint8Array.of(b)), ...["€", "é", "😀", "a", ""].map((t) => new TextEncoder().encode(t))];
    const table = ByteTable.of(pieces);
    let seed = 11;
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let run = 0; run < 500; run++) {
      const tokens = Array.from({ length: 1 + random(16) }, () => random(pieces.length) as Token);
      const text = new ByteText(table);
      const whole = new TextDecoder("utf-8", { ignoreBOM: true }).decode(Uint8Array.from(tokens.flatMap((t) => [...pieces[t]!])));
      expect(tokens.map((t) => text.push(t)).join("") + text.flush()).toBe(whole);
    }
  });
});
