// SPEC §2.1 and §8 as parseChatRequest applies them: defaults, aliases, normalisation and the limits' edges.
import { describe, expect, it } from "vitest";
import { MAX_CONTENT_CHARS } from "../../../../src/openai/chat-request.ts";
import { catchApiError } from "../../../fixtures/api-error.ts";
import { CATALOG, NONCE, parse } from "../../../fixtures/chat-request.ts";

const user = (content: unknown) => ({ role: "user", content });
const base = { model: "qwen3-4b", messages: [user("hi")] };

const fault = (body: unknown) => catchApiError(() => parse(body));

describe("§2.1 Chat completion request", () => {
  it("defaults: temperature 0.7, stream false, no pin, and no max_tokens (the agent answers up to 512 or what the context holds); a plain request seals exactly these fields", () => {
    expect(parse(base)).toEqual({
      body: { model: "qwen3-4b", messages: [{ role: "user", content: "hi" }], temperature: 0.7, nonce: NONCE, client_nonce: null },
      entry: CATALOG.models.find((m) => m.alias === "qwen3-4b"),
      echo: "qwen3-4b",
      stream: false,
      pin: undefined,
      logprobs: false,
    });
  });

  it("model: absent (or null) means the catalog default, which is sealed and echoed", () => {
    for (const body of [{ messages: [user("hi")] }, { model: null, messages: [user("hi")] }]) {
      const request = parse(body);
      expect([request.body.model, request.echo]).toEqual([CATALOG.default, CATALOG.default]);
    }
  });

  it("model: a hub id or svc-local seals the alias it names and echoes the value sent; an unknown one is 404", () => {
    const entry = CATALOG.models.find((m) => m.alias === "qwen3-8b")!;
    const byHub = parse({ ...base, model: entry.hub_id.toUpperCase() });
    expect([byHub.body.model, byHub.entry, byHub.echo]).toEqual([entry.alias, entry, entry.hub_id.toUpperCase()]);
    const local = parse({ ...base, model: "svc-local" });
    expect([local.body.model, local.echo]).toEqual([CATALOG.default, "svc-local"]);
    const unknown = fault({ ...base, model: "gpt-4o" });
    expect([unknown.status, unknown.code, unknown.param]).toEqual([404, "model_not_found", "model"]);
  });

  it("x-svc-receipt-nonce is sealed as client_nonce; a malformed one is invalid_value naming the header", () => {
    expect(parse(base, { receiptNonce: "my-nonce_0123456789" }).body.client_nonce).toBe("my-nonce_0123456789");
    const bad = catchApiError(() => parse(base, { receiptNonce: ["my-nonce_0123456789", "my-nonce_0123456789"] }));
    expect([bad.code, bad.param]).toEqual(["invalid_value", "x-svc-receipt-nonce"]);
  });

  it("faults come in order: the body's, then the receipt nonce's, then the model's 404", () => {
    const all = (body: object) => catchApiError(() => parse(body, { receiptNonce: "short" }));
    expect(all({ ...base, model: "gpt-4o", temperature: "hot" }).param).toBe("temperature");
    expect(all({ ...base, model: "gpt-4o" }).param).toBe("x-svc-receipt-nonce");
  });

  it("max_completion_tokens is an alias of max_tokens; max_tokens wins when both are present", () => {
    expect(parse({ ...base, max_completion_tokens: 9 }).body.max_tokens).toBe(9);
    expect(parse({ ...base, max_tokens: 3, max_completion_tokens: 9 }).body.max_tokens).toBe(3);
  });

  it("provider_key_id is an alias of provider", () => {
    expect(parse({ ...base, provider_key_id: "0123456789abcdef" }).pin).toBe("0123456789abcdef");
    expect(parse({ ...base, provider: "aaaaaaaa", provider_key_id: "bbbbbbbb" }).pin).toBe("aaaaaaaa");
  });

  it("content: a string, or text / input_text parts read as one text", () => {
    const parts = [
      { type: "text", text: "one" },
      { type: "input_text", text: "two" },
    ];
    expect(parse({ ...base, messages: [user(parts)] }).body.messages[0]?.content).toBe("one\ntwo");
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

  it("a lone surrogate anywhere else that is sealed is invalid_value naming that field, never a 500 at sealing (issue 41)", () => {
    const tool = (description: string, property = "city") => ({ type: "function", function: { name: "get_weather", description, parameters: { type: "object", properties: { [property]: { type: "string" } } } } });
    const called = (id: string, args: string) => ({ role: "assistant", content: null, tool_calls: [{ id, type: "function", function: { name: "get_weather", arguments: args } }] });
    // what JSON.parse makes of the escapes "\\ud800" and "\\udfff" in each field
    const cases: [unknown, string][] = [
      [{ ...base, tools: [tool("x\ud800")] }, "tools[0].function.description"],
      // a schema's own check names the schema (src/schema)
      [{ ...base, tools: [tool("fine", "c\udfff")] }, "tools[0].function.parameters"],
      [{ ...base, messages: [user("hi"), called("call_\ud800", "{}"), { role: "tool", tool_call_id: "call_\ud800", content: "sunny" }] }, "messages[1].tool_calls[0].id"],
      [{ ...base, messages: [user("hi"), called("call_1", '{"city":"\ud800"}'), { role: "tool", tool_call_id: "call_1", content: "sunny" }] }, "messages[1].tool_calls[0].function.arguments"],
    ];
    for (const [text, param] of cases) {
      const error = fault(text);
      expect([error.status, error.code, error.param], param).toEqual([400, "invalid_value", param]);
      expect(error.message).toContain("contains a lone UTF-16 surrogate");
    }
  });

  it("content with whole surrogate pairs and NUL characters is text and passes as it is", () => {
    expect(parse({ ...base, messages: [user("\ud83d\ude00 a\u0000b")] }).body.messages[0]?.content).toBe("😀 a\u0000b");
  });

  it("role: developer is served as a system turn", () => {
    const messages = [{ role: "developer", content: "be brief" }, user("hi")];
    expect(parse({ ...base, messages }).body.messages[0]).toEqual({ role: "system", content: "be brief" });
  });

  it("stream_options: extra keys are ignored", () => {
    expect(parse({ ...base, stream: true, stream_options: { include_usage: false, x: 1 } }).stream).toBe(true);
  });

  it("the first fault in document order is the one reported", () => {
    const error = fault({ model: "", messages: [user(5)], temperature: "hot" });
    expect([error.code, error.param]).toEqual(["invalid_value", "model"]);
  });
});

describe("§8 Limits", () => {
  it("at most 100 messages: 100 pass, 101 give too_many_messages", () => {
    expect(parse({ ...base, messages: Array(100).fill(user("x")) }).body.messages).toHaveLength(100);
    const error = fault({ ...base, messages: Array(101).fill(user("x")) });
    expect([error.status, error.code, error.param]).toEqual([400, "too_many_messages", "messages"]);
  });

  it("at most 256 KiB of content characters over all messages: the limit passes, one more fails", () => {
    const half = MAX_CONTENT_CHARS / 2;
    expect(() => parse({ ...base, messages: [user("a".repeat(half)), user("b".repeat(half))] })).not.toThrow();
    const error = fault({ ...base, messages: [user("a".repeat(half)), user("b".repeat(half + 1))] });
    expect([error.status, error.code, error.param]).toEqual([400, "content_too_large", "messages"]);
  });

  it("characters are code points: an emoji counts once", () => {
    const emoji = "\u{1F600}".repeat(MAX_CONTENT_CHARS);
    expect(() => parse({ ...base, messages: [user(emoji)] })).not.toThrow();
    expect(fault({ ...base, messages: [user(emoji + "a")] }).code).toBe("content_too_large");
  });

  it("a provider pin is hex, case-insensitive; anything else can never match and is refused", () => {
    expect(parse({ ...base, provider: "ABCDEF0123" }).pin).toBe("abcdef0123");
    expect(fault({ ...base, provider: "        " }).code).toBe("invalid_value");
    expect(fault({ ...base, provider: "provider-one" }).param).toBe("provider");
    expect(fault({ ...base, provider: "a".repeat(65) }).param).toBe("provider");
  });

  it("a provider pin needs at least 8 characters", () => {
    expect(parse({ ...base, provider: "abcdef01" }).pin).toBe("abcdef01");
    expect(fault({ ...base, provider: "abcdef0" }).param).toBe("provider");
    expect(fault({ ...base, provider_key_id: "abc" }).param).toBe("provider_key_id");
  });
});
