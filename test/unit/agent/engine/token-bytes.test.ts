// Each token's bytes in an answer's text (agent/engine/token-bytes.ts): llama.cpp's token_to_piece rules for byte-level
// BPE with special tokens not rendered, and the check that the model's detokenize adds nothing across tokens.
import { LlamaVocabularyType, type LlamaModel, type Token } from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { answerBytes, ByteTable, grammarBytes, textBytes, type Attributes, type Vocabulary } from "../../../../agent/engine/token-bytes.ts";
import { byteToUnicode } from "../../../../tiny-model/gguf.ts";

const mapped = byteToUnicode();
const bpe = (text: string) => [...Buffer.from(text)].map((b) => mapped[b]).join("");
const NONE: Attributes = { unknown: false, control: false, userDefined: false, normal: false, byte: false };
const normal = { ...NONE, normal: true };

// the 256 byte tokens, a merge, then one token of each other kind
const TOKENS = [...mapped, bpe(" né"), "<|im_end|>", "<think>", "<0x41>", "[PAD0]", "<unk>"];
const KINDS: Attributes[] = [...mapped.map(() => normal), normal, { ...NONE, control: true }, { ...NONE, userDefined: true }, { ...NONE, byte: true }, NONE, { ...NONE, unknown: true }];
const vocabulary: Vocabulary = { model: "gpt2", tokens: TOKENS, token_type: [...mapped.map(() => 1), 1, 3, 4, 6, 5, 2] };
const attributes = (kinds: Attributes[]) => (token: Token) => kinds[token]!;
const list = (bytes: Uint8Array | undefined) => [...bytes!];

describe("each token's bytes in the answer's text", () => {
  it("normal tokens are their mapped bytes; control, unknown and unused none; user-defined their text; <0xXX> its byte", () => {
    const text = answerBytes(vocabulary, attributes(KINDS))!;
    expect(list(text.get(256))).toEqual([...Buffer.from(" né")]);
    expect(list(text.get(0x20))).toEqual([0x20]);
    expect([257, 258, 259, 260, 261].map((t) => list(text.get(t)))).toEqual([[], [...Buffer.from("<think>")], [0x41], [], []]);
    expect(text.get(262)).toBeUndefined();
  });

  it("follows the attributes llama.cpp gives at load, not the GGUF's types (it makes some tokens control by their text)", () => {
    const retyped = [...KINDS];
    retyped[258] = { ...NONE, control: true, userDefined: true };
    expect(list(answerBytes(vocabulary, attributes(retyped))!.get(258))).toEqual([]);
  });

  it("one buffer holds the whole vocabulary's bytes; a token outside it has none", () => {
    const table = ByteTable.of([Uint8Array.of(1, 2), new Uint8Array(0), Uint8Array.of(3)]);
    expect([0, 1, 2].map((t) => list(table.get(t)))).toEqual([[1, 2], [], [3]]);
    expect([-1, 3, 1.5].map((t) => table.get(t))).toEqual([undefined, undefined, undefined]);
  });

  it("no table when a token's bytes are not certain: a character off the byte map, an empty or undecodable token, a bad byte token, another kind of vocabulary", () => {
    const withToken = (token: string, kind: Attributes) => {
      const v = { ...vocabulary, tokens: [...TOKENS, token], token_type: [...vocabulary.token_type!, 1] };
      return answerBytes(v, attributes([...KINDS, kind]));
    };
    expect(withToken("中", normal)).toBeUndefined();
    expect(withToken("", normal)).toBeUndefined();
    expect(withToken("a\uFFFD", { ...NONE, userDefined: true })).toBeUndefined();
    expect(withToken("<0xZZ>", { ...NONE, byte: true })).toBeUndefined();
    expect(withToken("<extra>", { ...NONE, userDefined: true })).toBeDefined();
    expect(answerBytes({ ...vocabulary, model: "llama" }, attributes(KINDS))).toBeUndefined();
  });
});

describe("the model's detokenize, checked to be the bytes one after another", () => {
  /** A fake loaded model whose detokenize joins the tokens' bytes, then applies `change`. */
  const model = (change: (text: string) => string = (t) => t, vocabularyType = LlamaVocabularyType.bpe) => {
    let calls = 0;
    const fake = {
      fileInfo: { metadata: { tokenizer: { ggml: vocabulary } } },
      vocabularyType,
      getTokenAttributes: (token: Token) => KINDS[token]!,
      detokenize(tokens: readonly Token[]) {
        calls++;
        return change(Buffer.concat(tokens.map((t) => answerBytes(vocabulary, attributes(KINDS))!.get(t)!)).toString());
      },
    };
    return { model: fake as unknown as LlamaModel, calls: () => calls };
  };

  it("a concatenating detokenize gives the table, read once per model", () => {
    const { model: m, calls } = model();
    const text = textBytes(m)!;
    expect(list(text.get(256))).toEqual([...Buffer.from(" né")]);
    expect(textBytes(m)).toBe(text);
    expect(calls()).toBe(1);
    expect(grammarBytes(m)).toBe(grammarBytes(m));
  });

  it("no table when llama.cpp would clean spaces, drop the first token's space, or read ▁ for a space, or the vocabulary is not BPE", () => {
    expect(textBytes(model((t) => t.replace(" ,", ",")).model)).toBeUndefined();
    expect(textBytes(model((t) => t.replace(/^ /, "")).model)).toBeUndefined();
    expect(textBytes(model((t) => t.replaceAll(" ", mapped[0x20]!)).model)).toBeUndefined();
    expect(textBytes(model(undefined, LlamaVocabularyType.spm).model)).toBeUndefined();
    expect(grammarBytes(model(undefined, LlamaVocabularyType.spm).model)).toBeDefined();
  });
});
