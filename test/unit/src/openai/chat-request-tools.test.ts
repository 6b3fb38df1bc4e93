// SPEC §2.1 for tool calling and reasoning controls, as a unit: what the gateway seals for `tools`, `tool_choice`,
// `parallel_tool_calls`, tool history, `reasoning_format`, `reasoning_effort` and `chat_template_kwargs`, and the
// 400 (with `param`) for each thing it cannot serve. No server: parseChatRequest alone.
import { describe, expect, it } from "vitest";
import { catchApiError } from "../../../fixtures/api-error.ts";
import { parse, plaintextWith, sealedControls } from "../../../fixtures/chat-request.ts";
import { parseSessionPlaintext } from "../../../../src/session/sealed-request.ts";

const user = { role: "user", content: "Weather?" };
const base = { model: "qwen3-4b", messages: [user] };
const weather = { type: "function", function: { name: "get_weather", description: "Weather", parameters: { type: "object", properties: { city: { type: "string" } } } } };
const call = (id: string, name = "get_weather") => ({ id, type: "function", function: { name, arguments: '{"city":"Paris"}' } });
const fault = (body: Record<string, unknown>) => {
  const err = catchApiError(() => parse({ ...base, ...body }));
  return [err.status, err.code, err.param];
};

describe("§2.1 tools, tool_choice, parallel_tool_calls", () => {
  it("sealed as sent, less nulls; tool_choice and parallel_tool_calls only beside tools", () => {
    const sealed = sealedControls({ ...base, tools: [{ ...weather, function: { ...weather.function, strict: null } }], tool_choice: "required", parallel_tool_calls: false });
    expect(sealed).toEqual({ tools: [weather], tool_choice: "required", parallel_tool_calls: false });
    expect(sealedControls({ ...base, tool_choice: "none", parallel_tool_calls: true })).toEqual({});
    expect(sealedControls({ ...base, tools: [] })).toEqual({});
  });

  it('a named tool_choice must name a tool; "required" and a named one need tools', () => {
    expect(sealedControls({ ...base, tools: [weather], tool_choice: { type: "function", function: { name: "get_weather" } } }).tool_choice)
      .toEqual({ type: "function", function: { name: "get_weather" } });
    expect(fault({ tools: [weather], tool_choice: { type: "function", function: { name: "launch" } } })).toEqual([400, "invalid_value", "tool_choice.function.name"]);
    expect(fault({ tool_choice: "required" })).toEqual([400, "invalid_value", "tool_choice"]);
    expect(fault({ tool_choice: "sometimes" })).toEqual([400, "invalid_value", "tool_choice"]);
  });

  it("names follow OpenAI's rule; parameters must compile, and strict refuses what the grammar cannot enforce", () => {
    expect(fault({ tools: [{ type: "function", function: { name: "get weather" } }] })).toEqual([400, "invalid_value", "tools[0].function.name"]);
    expect(fault({ tools: [{ type: "function", function: { name: "f", parameters: { type: "object", properties: { a: { $ref: "#/$defs/none" } } } } }] }))
      .toEqual([400, "invalid_value", "tools[0].function.parameters.properties.a.$ref"]);
    const email = { type: "object", properties: { e: { type: "string", format: "uri" } } };
    expect(fault({ tools: [weather, { type: "function", function: { name: "f", strict: true, parameters: email } }] })).toEqual([400, "invalid_value", "tools[1].function.parameters.properties.e.format"]);
    expect(sealedControls({ ...base, tools: [{ type: "function", function: { name: "f", parameters: email } }] }).tools).toHaveLength(1);
    expect(fault({ tools: [weather, weather] })).toEqual([400, "invalid_value", "tools[1].function.name"]);
  });

  it("a JSON response_format beside tools the model may call is refused, at either end; beside tool_choice none it is served", () => {
    expect(fault({ tools: [weather], response_format: { type: "json_object" } })).toEqual([400, "unsupported_parameter", "response_format"]);
    expect(sealedControls({ ...base, tools: [weather], tool_choice: "none", response_format: { type: "json_object" } }).response_format).toEqual({ type: "json_object" });
    // the agent reads the sealed request by the same rule, and refuses it with the gateway's very error
    const gateway = catchApiError(() => parse({ ...base, tools: [weather], tool_choice: "required", response_format: { type: "json_object" } }));
    const agent = catchApiError(() => parseSessionPlaintext(plaintextWith({ tools: [weather], tool_choice: "required", response_format: { type: "json_object" } })));
    expect(agent.toEnvelope()).toEqual(gateway.toEnvelope());
    expect(parseSessionPlaintext(plaintextWith({ tools: [weather], tool_choice: "none", response_format: { type: "json_object" } })).response_format).toEqual({ type: "json_object" });
  });
});

describe("§2.1 tool history: assistant tool_calls and tool messages", () => {
  it("normalised for the model: content null beside calls, text parts joined, the call as sent", () => {
    const messages = [user, { role: "assistant", content: null, tool_calls: [call("c1")] }, { role: "tool", tool_call_id: "c1", content: [{ type: "text", text: "18C" }] }];
    expect(parse({ ...base, tools: [weather], messages }).body.messages).toEqual([
      { role: "user", content: "Weather?" },
      { role: "assistant", content: null, tool_calls: [call("c1")] },
      { role: "tool", tool_call_id: "c1", content: "18C" },
    ]);
    const thought = parse({ ...base, messages: [user, { role: "assistant", content: "It is sunny.", reasoning_content: "Look it up." }, user] }).body.messages[1];
    expect(thought).toEqual({ role: "assistant", content: "It is sunny.", reasoning_content: "Look it up." });
  });

  it("a tool message answering no call, a call left unanswered, a repeated id, a call naming no tool: 400 naming it", () => {
    expect(fault({ messages: [user, { role: "tool", tool_call_id: "c9", content: "x" }] })).toEqual([400, "invalid_value", "messages[1].tool_call_id"]);
    expect(fault({ messages: [user, { role: "assistant", content: null, tool_calls: [call("c1"), call("c2")] }, { role: "tool", tool_call_id: "c1", content: "x" }, user] }))
      .toEqual([400, "invalid_value", "messages[1].tool_calls[1]"]);
    const twice = [user, { role: "assistant", content: null, tool_calls: [call("c1")] }, { role: "tool", tool_call_id: "c1", content: "x" }, { role: "assistant", content: null, tool_calls: [call("c1")] }, { role: "tool", tool_call_id: "c1", content: "y" }];
    expect(fault({ messages: twice })).toEqual([400, "invalid_value", "messages[3].tool_calls[0].id"]);
    expect(fault({ tools: [weather], messages: [user, { role: "assistant", content: null, tool_calls: [call("c1", "launch")] }, { role: "tool", tool_call_id: "c1", content: "x" }] }))
      .toEqual([400, "invalid_value", "messages[1].tool_calls[0].function.name"]);
  });

  it("missing pieces read as missing fields: a tool message's tool_call_id, an assistant's content without calls", () => {
    expect(fault({ messages: [user, { role: "tool", content: "x" }] })).toEqual([400, "missing_field", "messages[1].tool_call_id"]);
    expect(fault({ messages: [user, { role: "assistant" }] })).toEqual([400, "missing_field", "messages[1].content"]);
    expect(fault({ messages: [user, { role: "assistant", content: null, tool_calls: [] }] })).toEqual([400, "invalid_type", "messages[1].content"]);
    expect(fault({ messages: [{ role: "user", content: "x", tool_calls: [call("c1")] }] })).toEqual([400, "invalid_value", "messages[0].tool_calls"]);
    expect(fault({ messages: [user, { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: { city: "Paris" } } }] }] }))
      .toEqual([400, "invalid_type", "messages[1].tool_calls[0].function.arguments"]);
  });
});

describe("§2.1 reasoning controls", () => {
  it('reasoning_format: "parsed" and its llama-server synonyms are sealed as "parsed"; "none" seals nothing', () => {
    for (const format of ["parsed", "deepseek", "auto"]) expect(sealedControls({ ...base, reasoning_format: format }), format).toEqual({ reasoning_format: "parsed" });
    expect(sealedControls({ ...base, reasoning_format: "none" })).toEqual({});
    expect(fault({ reasoning_format: "deepseek-legacy" })).toEqual([400, "invalid_value", "reasoning_format"]);
  });

  it("the operator's --reasoning-format parsed is the default a request may override", () => {
    expect(sealedControls(base, { reasoningFormat: "parsed" })).toEqual({ reasoning_format: "parsed" });
    expect(sealedControls({ ...base, reasoning_format: "none" }, { reasoningFormat: "parsed" })).toEqual({});
  });

  it('reasoning_effort "none" and enable_thinking false turn thinking off; the other efforts leave it on', () => {
    expect(sealedControls({ ...base, reasoning_effort: "none" })).toEqual({ enable_thinking: false });
    expect(sealedControls({ ...base, chat_template_kwargs: { enable_thinking: false } })).toEqual({ enable_thinking: false });
    for (const effort of ["minimal", "low", "medium", "high"]) expect(sealedControls({ ...base, reasoning_effort: effort }), effort).toEqual({});
    expect(sealedControls({ ...base, chat_template_kwargs: { enable_thinking: true } })).toEqual({});
  });

  it("other template kwargs are refused; a contradiction is a 400", () => {
    expect(fault({ chat_template_kwargs: { add_generation_prompt: false } })).toEqual([400, "unsupported_parameter", "chat_template_kwargs.add_generation_prompt"]);
    expect(fault({ chat_template_kwargs: { enable_thinking: "no" } })).toEqual([400, "invalid_type", "chat_template_kwargs.enable_thinking"]);
    expect(fault({ reasoning_effort: "none", chat_template_kwargs: { enable_thinking: true } })).toEqual([400, "invalid_value", "reasoning_effort"]);
  });
});
