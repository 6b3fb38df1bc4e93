// Generated tokens into text deltas (agent/engine/answer/token-text.ts) against a fake byte-level tokenizer: a
// character split across tokens comes out whole, and each token is decoded after the ones before it.
import type { LlamaModel, Token } from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { TokenText } from "../../../../../agent/engine/answer/token-text.ts";

/** Token n is byte n; like SentencePiece, the first token of a decode loses a leading space. */
function fakeModel() {
  let calls = 0;
  const model = {
    detokenize(tokens: readonly Token[]) {
      calls++;
      return new TextDecoder().decode(Uint8Array.from(tokens)).replace(/^ /, "");
    },
  };
  return { model: model as unknown as LlamaModel, calls: () => calls };
}
const tokensOf = (text: string) => [...new TextEncoder().encode(text)] as Token[];

describe("TokenText", () => {
  it("never splits a UTF-8 character: its bytes are held until it is whole", () => {
    const { model } = fakeModel();
    const text = new TokenText(model);
    const pieces = tokensOf("é😀").map((t) => text.push(t));
    expect(pieces).toEqual(["", "é", "", "", "", "😀"]);
  });

  it("decodes each token after the ones before it (a space keeps its place), and the deltas add up to the text", () => {
    const { model } = fakeModel();
    const text = new TokenText(model);
    const whole = "a b, naïve café — 😀 done. ".repeat(5);
    const pieces = tokensOf(whole).map((t) => text.push(t));
    expect(pieces.slice(0, 3)).toEqual(["a", " ", "b"]);
    expect(pieces.join("") + text.flush()).toBe(whole.replace(/^ /, ""));
  });

  it("costs one decode per token, the trail's text reused (a fresh one only as its window slides)", () => {
    const { model, calls } = fakeModel();
    const text = new TokenText(model);
    for (const t of tokensOf("x".repeat(120))) text.push(t);
    expect(calls()).toBeLessThan(120 * 1.2);
  });

  it("a stray byte past four tokens is real output, and flush returns what is held", () => {
    const { model } = fakeModel();
    const text = new TokenText(model);
    expect([0xf0, 0x9f, 0x98].map((t) => text.push(t as Token))).toEqual(["", "", ""]);
    expect(text.flush()).toBe("\uFFFD");
    expect(text.flush()).toBe("");
  });
});
