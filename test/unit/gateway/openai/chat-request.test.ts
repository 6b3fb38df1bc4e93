// SPEC §2.1 and §8 as parseChatRequest applies them: defaults, aliases, normalisation and the limits' edges.
import { describe, expect, it } from "vitest";
import { MAX_CONTENT_CHARS, parseChatRequest } from "../../../../gateway/openai/chat-request.ts";
import { catchApiError } from "../../../fixtures/api-error.ts";

const user = (content: unknown) => ({ role: "user", content });
const base = { model: "qwen3-4b", messages: [user("hi")] };

const fault = (body: unknown) => catchApiError(() => parseChatRequest(body));

describe("§2.1 Chat completion request", () => {
  it("defaults: max_tokens 512, temperature 0.7, stream false, no pin, no sampling control", () => {
    expect(parseChatRequest(base)).toEqual({
      model: "qwen3-4b",
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 512,
      temperature: 0.7,
      stream: false,
      provider: undefined,
      sampling: {},
      tooling: {},
    });
  });

  it("model: absent means the catalog default (undefined here); null likewise", () => {
    expect(parseChatRequest({ messages: [user("hi")] }).model).toBeUndefined();
    expect(parseChatRequest({ model: null, messages: [user("hi")] }).model).toBeUndefined();
  });

  it("max_completion_tokens is an alias of max_tokens; max_tokens wins when both are present", () => {
    expect(parseChatRequest({ ...base, max_completion_tokens: 9 }).max_tokens).toBe(9);
    expect(parseChatRequest({ ...base, max_tokens: 3, max_completion_tokens: 9 }).max_tokens).toBe(3);
  });

  it("provider_key_id is an alias of provider", () => {
    expect(parseChatRequest({ ...base, provider_key_id: "0123456789abcdef" }).provider).toBe("0123456789abcdef");
    expect(parseChatRequest({ ...base, provider: "aaaaaaaa", provider_key_id: "bbbbbbbb" }).provider).toBe("aaaaaaaa");
  });

  it("content: a string, or text / input_text parts read as one text", () => {
    const parts = [
      { type: "text", text: "one" },
      { type: "input_text", text: "two" },
    ];
    expect(parseChatRequest({ ...base, messages: [user(parts)] }).messages[0]?.content).toBe("one\ntwo");
  });

  it("content that is not Unicode text (a lone UTF-16 surrogate) is invalid_value naming the field", () => {
    // what JSON.parse makes of the escapes "\ud800" and "\udfff": half a pair, which no UTF-8 can encode
    for (const lone of ["\ud800", "a\udfffb", "x\ud83d"]) {
      const asString = fault({ ...base, messages: [user("fine"), user(lone)] });
      expect([asString.code, asString.param], JSON.stringify(lone)).toEqual(["invalid_value", "messages[1].content"]);
      expect(asString.message).toMatch(/^messages\[1\]\.content: contains a lone UTF-16 surrogate/);
      const asPart = fault({ ...base, messages: [user([{ type: "text", text: "ok" }, { type: "text", text: lone }])] });
      expect([asPart.code, asPart.param]).toEqual(["invalid_value", "messages[0].content[1].text"]);
    }
  });

  it("content with whole surrogate pairs and NUL characters is text and passes as it is", () => {
    expect(parseChatRequest({ ...base, messages: [user("\ud83d\ude00 a\u0000b")] }).messages[0]?.content).toBe("😀 a\u0000b");
  });

  it("role: developer is served as a system turn", () => {
    const messages = [{ role: "developer", content: "be brief" }, user("hi")];
    expect(parseChatRequest({ ...base, messages }).messages[0]).toEqual({ role: "system", content: "be brief" });
  });

  it("stream_options: extra keys are ignored", () => {
    expect(parseChatRequest({ ...base, stream: true, stream_options: { include_usage: false, x: 1 } }).stream).toBe(true);
  });

  it("the first fault in document order is the one reported", () => {
    const error = fault({ model: "", messages: [user(5)], temperature: "hot" });
    expect([error.code, error.param]).toEqual(["invalid_value", "model"]);
  });
});

describe("§8 Limits", () => {
  it("at most 100 messages: 100 pass, 101 give too_many_messages", () => {
    expect(parseChatRequest({ ...base, messages: Array(100).fill(user("x")) }).messages).toHaveLength(100);
    const error = fault({ ...base, messages: Array(101).fill(user("x")) });
    expect([error.status, error.code, error.param]).toEqual([400, "too_many_messages", "messages"]);
  });

  it("at most 256 KiB of content characters over all messages: the limit passes, one more fails", () => {
    const half = MAX_CONTENT_CHARS / 2;
    expect(() => parseChatRequest({ ...base, messages: [user("a".repeat(half)), user("b".repeat(half))] })).not.toThrow();
    const error = fault({ ...base, messages: [user("a".repeat(half)), user("b".repeat(half + 1))] });
    expect([error.status, error.code, error.param]).toEqual([400, "content_too_large", "messages"]);
  });

  it("characters are code points: an emoji counts once", () => {
    const emoji = "\u{1F600}".repeat(MAX_CONTENT_CHARS);
    expect(() => parseChatRequest({ ...base, messages: [user(emoji)] })).not.toThrow();
    expect(fault({ ...base, messages: [user(emoji + "a")] }).code).toBe("content_too_large");
  });

  it("a provider pin is hex, case-insensitive; anything else can never match and is refused", () => {
    expect(parseChatRequest({ ...base, provider: "ABCDEF0123" }).provider).toBe("abcdef0123");
    expect(fault({ ...base, provider: "        " }).code).toBe("invalid_value");
    expect(fault({ ...base, provider: "provider-one" }).param).toBe("provider");
    expect(fault({ ...base, provider: "a".repeat(65) }).param).toBe("provider");
  });

  it("a provider pin needs at least 8 characters", () => {
    expect(parseChatRequest({ ...base, provider: "abcdef01" }).provider).toBe("abcdef01");
    expect(fault({ ...base, provider: "abcdef0" }).param).toBe("provider");
    expect(fault({ ...base, provider_key_id: "abc" }).param).toBe("provider_key_id");
  });
});
