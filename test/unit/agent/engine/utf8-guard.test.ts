// The UTF-8 guard on a fake vocabulary: each token's bytes as llama.cpp writes them, the decoder's state over the
// answer, and the tokens banned in each state, so that whatever is sampled between the bans is valid UTF-8.
import type { LlamaModel, SequenceEvaluateOptions, Token, Tokenizer } from "node-llama-cpp";
import { TokenBias } from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { biasMap } from "../../../../agent/engine/sampler.ts";
import { guardUtf8, REJECT, run, utf8Table, Utf8Guard } from "../../../../agent/engine/utf8-guard.ts";
import { tokenBytes, type Vocabulary } from "../../../../agent/engine/token-bytes.ts";
import { byteToUnicode } from "../../../../tiny-model/gguf.ts";

const mapped = byteToUnicode();
/** A byte-level BPE token's text for these bytes. */
const bpe = (...bytes: number[]) => bytes.map((b) => mapped[b]).join("");
const ascii = (text: string) => [...Buffer.from(text)];

// the 256 byte tokens, then merges that begin or end mid-character or are invalid within, then the specials
const MERGES = [
  [0xc3, 0xa9], // é whole
  [0xa9, ...ascii("x")], // a continuation, then ASCII
  [0xe0, 0xa4], // the start of a Devanagari character
  [0xa4, 0xbe], // ... its last byte, then a continuation too many
  [0xe0, 0x80], // overlong
  [0xed, 0xa0, 0x80], // a surrogate
  [0xc0, 0xaf], // overlong '/'
  [0xc3, ...ascii("A")], // a lead byte, then ASCII: llama.cpp's grammar reads it as one character
  [0xf0, 0x9f], // the start of an emoji
  [0x98, 0x80], // ... its end
  [0xf4, 0x90], // past U+10FFFF
  ascii("ab"),
];
const SPECIALS = ["<|im_end|>", "<tool_call>"];
const EOG = (256 + MERGES.length) as Token;
const vocabulary: Vocabulary = {
  model: "gpt2",
  tokens: [...mapped, ...MERGES.map((bytes) => bpe(...bytes)), ...SPECIALS],
  token_type: [...mapped.map(() => 1), ...MERGES.map(() => 1), 3, 4],
};
const merge = (i: number) => (256 + i) as Token;
const bytes = tokenBytes(vocabulary)!;
const table = utf8Table(bytes, (token) => token === EOG);
const tokenizer = { isEogToken: (token: Token) => token === EOG } as unknown as Tokenizer;

describe("each token's bytes, as llama.cpp writes them out", () => {
  it("byte-level BPE: each character is the byte it stands for; control and user-defined tokens are their text", () => {
    expect([...bytes[0xe9]!]).toEqual([0xe9]);
    expect([...bytes[0x20]!]).toEqual([0x20]);
    expect([...bytes[merge(5)]!]).toEqual([0xed, 0xa0, 0x80]);
    expect(Buffer.from(bytes[EOG]!).toString()).toBe("<|im_end|>");
    expect(Buffer.from(bytes[EOG + 1]!).toString()).toBe("<tool_call>");
  });

  it("SentencePiece: <0xXX> byte tokens are their byte, ▁ is a space; another kind of vocabulary has no bytes to guard", () => {
    const spm = tokenBytes({ model: "llama", tokens: ["<0xE4>", "\u2581hi", "<0x41>"], token_type: [6, 1, 1] })!;
    expect(spm.map((b) => [...b])).toEqual([[0xe4], [0x20, 0x68, 0x69], ascii("<0x41>")]);
    expect(tokenBytes({ model: "bert", tokens: ["a"] })).toBeUndefined();
  });
});

describe("the decoder's state", () => {
  it("valid UTF-8 ends between characters; every kind of invalid run is refused", () => {
    for (const text of ["a", "é", "ह", "😀", "\u{10FFFF}", "\uD7FF", "\uE000"]) expect(run(0, Buffer.from(text)), text).toBe(0);
    const invalid = [[0x80], [0xbf], [0xc0, 0xaf], [0xc1, 0xbf], [0xf5, 0x80], [0xff], [0xc3, 0x41], [0xe0, 0x80, 0x80], [0xed, 0xa0, 0x80], [0xf0, 0x80, 0x80, 0x80], [0xf4, 0x90, 0x80, 0x80]];
    for (const run_ of invalid) expect(run(0, Uint8Array.from(run_)), run_.join(" ")).toBe(REJECT);
    expect(run(0, Uint8Array.of(0xe0, 0xa4))).not.toBe(0);
    expect(run(run(0, Uint8Array.of(0xe0, 0xa4)), Uint8Array.of(0xb9))).toBe(0);
  });
});

describe("the tokens banned in each state", () => {
  const banned = (guard: Utf8Guard) => [...biasMap(guard.bias()).entries()].filter(([, v]) => v === -Infinity).map(([t]) => t);

  it("between characters: C0/C1/F5–FF and tokens invalid within; not the end of the answer", () => {
    const guard = new Utf8Guard(table, tokenizer);
    const ban = banned(guard);
    for (const b of [0xc0, 0xc1, 0xf5, 0xff]) expect(ban).toContain(b);
    for (const i of [4, 5, 6, 7, 10]) expect(ban, `merge ${i}`).toContain(merge(i));
    for (const t of [0x41, 0xc3, 0xe0, 0xf0, merge(0), merge(2), merge(8), merge(11), EOG, EOG + 1]) expect(ban).not.toContain(t);
    // a token that begins with a continuation byte is the grammar's to refuse here: listing them all would be costly
    for (const t of [0x80, 0xbf, merge(1), merge(3), merge(9)]) expect(ban).not.toContain(t);
  });

  it("after E0: only A0–BF may follow (80–9F would be overlong), and the answer may not end", () => {
    const guard = new Utf8Guard(table, tokenizer);
    guard.push(0xe0 as Token);
    const ban = banned(guard);
    for (let b = 0x80; b <= 0x9f; b++) expect(ban).toContain(b);
    for (let b = 0xa0; b <= 0xbf; b++) expect(ban).not.toContain(b);
    expect(ban).toContain(EOG);
    expect(ban).toContain(merge(1)); // A9 x: A9 is a right second byte, but x is not the continuation still due
    guard.push(0xa4 as Token);
    expect(banned(guard)).toContain(merge(3)); // A4 BE: one continuation too many
    guard.push(0xb9 as Token);
    expect(banned(guard)).toContain(0xc0);
    expect(banned(guard)).not.toContain(0x41);
  });

  it("after ED, F0 and F4: the second byte's range (no surrogates, no overlong, nothing past U+10FFFF)", () => {
    const after = (lead: number) => {
      const guard = new Utf8Guard(table, tokenizer);
      guard.push(lead as Token);
      return banned(guard);
    };
    expect(after(0xed)).toEqual(expect.arrayContaining([0xa0, 0xbf]));
    expect(after(0xed)).not.toContain(0x9f);
    expect(after(0xf0)).toEqual(expect.arrayContaining([0x80, 0x8f]));
    expect(after(0xf0)).not.toContain(0x90);
    expect(after(0xf4)).toEqual(expect.arrayContaining([0x90, 0xbf]));
    expect(after(0xf4)).not.toContain(0x8f);
  });

  it("the caller's bias is kept, and a ban wins over it; one bias object per state and base", () => {
    const guard = new Utf8Guard(table, tokenizer);
    const base = new TokenBias(tokenizer);
    biasMap(base).set(0x41 as Token, 5).set(0xc0 as Token, 10);
    const bias = biasMap(guard.bias(base));
    expect(bias.get(0x41 as Token)).toBe(5);
    expect(bias.get(0xc0 as Token)).toBe(-Infinity);
    expect(guard.bias(base)).toBe(guard.bias(base));
  });

  it("sampling at random among the tokens the guard and llama.cpp's grammar leave gives valid UTF-8, every time", () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let answer = 0; answer < 200; answer++) {
      const guard = new Utf8Guard(table, tokenizer);
      const out: number[] = [];
      let pending = false;
      for (let i = 0; i < 40 || pending; i++) {
        const ban = new Set(banned(guard));
        // llama.cpp's grammar refuses by the first byte: a continuation between characters, any other within one
        const allowed = bytes.map((_, t) => t as Token).filter((t) => !ban.has(t) && t !== EOG && t !== EOG + 1 && pending === ((bytes[t]![0]! & 0xc0) === 0x80));
        const token = allowed[Math.floor(random() * allowed.length)]!;
        guard.push(token);
        out.push(...bytes[token]!);
        pending = run(0, Uint8Array.from(out)) !== 0;
      }
      expect(() => new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(out))).not.toThrow();
    }
  });
});

describe("guardUtf8 in front of evaluate()'s token bias", () => {
  const model = { fileInfo: { metadata: { tokenizer: { ggml: vocabulary } } }, isEogToken: (t: Token) => t === EOG, tokenizer } as unknown as LlamaModel;

  it("under a grammar held from the first token, every call sees the guard's bias merged with the options' own", () => {
    const own = new TokenBias(tokenizer);
    biasMap(own).set(0x41 as Token, 3);
    const options: SequenceEvaluateOptions = { tokenBias: own };
    guardUtf8(model, options)!;
    const bias = biasMap((options.tokenBias as () => TokenBias)());
    expect(bias.get(0x41 as Token)).toBe(3);
    expect(bias.get(0xc0 as Token)).toBe(-Infinity);
  });

  it("under a lazy grammar, the options' own bias until the grammar starts", () => {
    let started = false;
    const options: SequenceEvaluateOptions = { grammarEvaluationState: () => (started ? ({} as never) : undefined) };
    guardUtf8(model, options)!;
    const bias = options.tokenBias as () => TokenBias;
    expect(biasMap(bias()).size).toBe(0);
    started = true;
    expect(biasMap(bias()).get(0xc0 as Token)).toBe(-Infinity);
  });

  it("a vocabulary whose bytes are unknown gets no guard", () => {
    const other = { ...model, fileInfo: { metadata: { tokenizer: { ggml: { model: "bert", tokens: ["a"] } } } } } as unknown as LlamaModel;
    const options: SequenceEvaluateOptions = {};
    expect(guardUtf8(other, options)).toBeUndefined();
    expect(options.tokenBias).toBeUndefined();
  });
});
