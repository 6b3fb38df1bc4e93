// The sealed request's additions for embeddings and legacy completions (issue 31): optional fields, so a chat
// request reads as before, and each session kind carries only what it may.
import { describe, expect, it } from "vitest";
import { ZodError } from "zod";
import { parseSessionPlaintext } from "../../../../src/session/sealed-request.ts";

const base = { model: "m", messages: [], temperature: 0, client_nonce: null, nonce: "000102030405060708090a0b0c0d0e0f" };

describe("issue 31: what an embeddings or legacy session seals", () => {
  it("an embeddings session has inputs and a length, and no messages", () => {
    expect(parseSessionPlaintext({ ...base, input: ["a", [1, 2]], dimensions: 8 })).toMatchObject({ input: ["a", [1, 2]], dimensions: 8 });
    for (const bad of [
      { ...base, input: ["a"] },
      { ...base, dimensions: 8 },
      { ...base, input: ["a"], dimensions: 8, messages: [{ role: "user", content: "hi" }] },
      { ...base, input: [], dimensions: 8 },
      { ...base, input: [""], dimensions: 8 },
      { ...base, input: [[-1]], dimensions: 8 },
    ]) {
      expect(() => parseSessionPlaintext(bad)).toThrow(ZodError);
    }
  });

  it("a legacy completion's prompt stands alone", () => {
    expect(parseSessionPlaintext({ ...base, prompt: "raw" }).prompt).toBe("raw");
    expect(() => parseSessionPlaintext({ ...base, prompt: "raw", messages: [{ role: "user", content: "hi" }] })).toThrow(ZodError);
    expect(() => parseSessionPlaintext({ ...base, prompt: "raw", input: ["a"], dimensions: 8 })).toThrow(ZodError);
  });
});

describe("issue 43: logprobs as the agent reads them", () => {
  it("top_logprobs 0–20 only when asked, never on an embeddings session; a max_tokens past the entries' cap is the gateway's very 400", () => {
    expect(parseSessionPlaintext({ ...base, top_logprobs: 20, max_tokens: 3120 }).top_logprobs).toBe(20);
    expect(parseSessionPlaintext(base)).not.toHaveProperty("top_logprobs");
    for (const bad of [{ ...base, top_logprobs: 21 }, { ...base, top_logprobs: -1 }, { ...base, top_logprobs: 1.5 }, { ...base, input: ["a"], dimensions: 8, top_logprobs: 0 }]) {
      expect(() => parseSessionPlaintext(bad), JSON.stringify(bad)).toThrow(ZodError);
    }
    expect(() => parseSessionPlaintext({ ...base, top_logprobs: 20, max_tokens: 3121 })).toThrow(
      expect.objectContaining({ code: "invalid_value", param: "max_tokens", message: expect.stringMatching(/^max_tokens: with 20 top_logprobs an answer carries the logprobs of at most 3120 tokens/) }),
    );
  });
});
