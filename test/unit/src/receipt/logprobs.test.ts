// Issue 43's logprob entries as every route writes them (RECEIPTS.md "Version 4"): a token's string as a function
// of its bytes, OpenAI's legacy arrays as a function of the entries, and the hash a v4 receipt signs.
import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../../../src/receipt/canonical-json.ts";
import { nodeSha256Hex } from "../../../../src/crypto/sha256-node.ts";
import { legacyLogprobs, legacyOffsetAfter, logprobsSha256, tokenString, tokenStringProblem, type TokenLogprob } from "../../../../src/receipt/logprobs.ts";

const entry = (bytes: number[], logprob: number, top: { bytes: number[]; logprob: number }[] = []): TokenLogprob => ({
  id: bytes[0] ?? 0, token: tokenString(bytes), bytes, logprob, top_logprobs: top.map((alt, i) => ({ id: 1000 + i, token: tokenString(alt.bytes), bytes: alt.bytes, logprob: alt.logprob })),
});

describe("RECEIPTS.md Version 4: a token's string", () => {
  it("its bytes as UTF-8, an incomplete character at the end left out, other bytes that are not UTF-8 as U+FFFD", () => {
    expect(tokenString([...Buffer.from("Hi ✓")])).toBe("Hi ✓");
    // "é" is C3 A9: the first byte alone is an incomplete character, the second alone is not UTF-8
    expect([tokenString([0xc3]), tokenString([0xa9]), tokenString([0x61, 0xf0, 0x9f])]).toEqual(["", "\ufffd", "a"]);
    expect(tokenString([0xff, 0x61])).toBe("\ufffda");
  });

  it("each token starts afresh, whatever the one before left incomplete; a byte order mark is U+FEFF, not dropped", () => {
    expect(tokenString([0xf0, 0x9f, 0x91])).toBe("");
    expect(tokenString([0x8b])).toBe("\ufffd");
    expect(tokenString([0xef, 0xbb, 0xbf, 0x61])).toBe("\ufeffa");
  });

  it("an entry or alternative whose string is not its bytes' is named", () => {
    const good = entry([0x61], -1, [{ bytes: [0x62], logprob: -2 }]);
    expect(tokenStringProblem([good])).toBeUndefined();
    expect(tokenStringProblem([good, { ...good, token: "b" }])).toBe("logprobs[1].token is not the string of its bytes");
    expect(tokenStringProblem([{ ...good, top_logprobs: [{ ...good.top_logprobs[0]!, token: "" }] }])).toBe("logprobs[0].top_logprobs[0].token is not the string of its bytes");
  });
});

describe("RECEIPTS.md Version 4: what the receipt signs and what the legacy route derives", () => {
  const entries = [entry([0x48], -0.5, [{ bytes: [0x48], logprob: -0.5 }, { bytes: [0x68], logprob: -1 }]), entry([0xc3], -2, [{ bytes: [0x61], logprob: -0.1 }, { bytes: [0x62], logprob: -0.1 }]), entry([0xa9], -0.25)];

  it("logprobs_sha256 is the SHA-256 of the entries' RFC 8785 JSON, in order", () => {
    expect(logprobsSha256(entries)).toBe(nodeSha256Hex(canonicalJson(entries)));
    expect(logprobsSha256([...entries].reverse())).not.toBe(logprobsSha256(entries));
  });

  it("legacy arrays: tokens, token_logprobs, a {token: logprob} object per position, offsets in code points from where the stream was", () => {
    const legacy = legacyLogprobs(entries, 3);
    expect(legacy).toEqual({
      tokens: ["H", "", "\ufffd"],
      token_logprobs: [-0.5, -2, -0.25],
      top_logprobs: [{ H: -0.5, h: -1 }, { a: -0.1, b: -0.1 }, {}],
      text_offset: [3, 4, 4],
      content: entries,
    });
    expect(legacyOffsetAfter(entries, 3)).toBe(5);
  });

  it("an alternative whose string repeats an earlier one's is left out of the object (content keeps it); __proto__ is a key like any other", () => {
    const repeated = entry([0x61], -1, [{ bytes: [0xc3], logprob: -1 }, { bytes: [0xc4], logprob: -2 }, { bytes: [...Buffer.from("__proto__")], logprob: -3 }]);
    const [top] = legacyLogprobs([repeated]).top_logprobs;
    expect(JSON.parse(JSON.stringify(top))).toEqual({ "": -1, ["__proto__"]: -3 });
    expect(Object.keys(top!)).toEqual(["", "__proto__"]);
  });
});
