// POST /v1/responses as parseResponsesRequest reads it (docs/api.md "Responses"): the translation into the chat
// request svc seals, the 400s for what needs stored state or hosted tools, and faults named by the Responses field.
import { describe, expect, it } from "vitest";
import { parseResponsesRequest } from "../../../../src/openai/responses-request.ts";
import { RESPONSES_REFUSED_FIELDS } from "../../../../src/openai/unsupported-fields.ts";
import { catchApiError } from "../../../fixtures/api-error.ts";
import { CATALOG, NONCE } from "../../../fixtures/chat-request.ts";

const parse = (body: unknown) => parseResponsesRequest(body, { catalog: CATALOG, nonce: NONCE });
const fault = (body: unknown) => {
  const error = catchApiError(() => parse(body));
  return [error.status, error.code, error.param, error.message];
};
const WEATHER = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };

describe("Responses: the request as chat", () => {
  it("a lone surrogate in a function_call's arguments or call_id is a 400 naming the input item, never a 500 at sealing (issue 41)", () => {
    const input = (call: Record<string, string>) => [
      { role: "user", content: "weather?" },
      { type: "function_call", call_id: "call_1", name: "get_weather", arguments: "{}", ...call },
      { type: "function_call_output", call_id: call.call_id ?? "call_1", output: "sunny" },
    ];
    const tools = [{ type: "function", name: "get_weather", parameters: WEATHER }];
    for (const call of [{ arguments: '{"city":"\ud800"}' }, { call_id: "call_\udfff" }] as Record<string, string>[]) {
      const [status, code, param, message] = fault({ model: "qwen3-4b", input: input(call), tools });
      expect([status, code, param]).toEqual([400, "invalid_value", "input[1]"]);
      expect(message).toContain("contains a lone UTF-16 surrogate");
    }
  });

  it("input as a string is one user message; instructions a system message before it; reasoning always comes back apart", () => {
    const { chat, echo } = parse({ model: "qwen3-4b", input: "Say hi.", instructions: "Be brief.", max_output_tokens: 32, temperature: 0.5, top_p: 0.9 });
    expect(chat.body).toEqual({
      model: "qwen3-4b",
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Say hi." }],
      max_tokens: 32,
      temperature: 0.5,
      top_p: 0.9,
      reasoning_format: "parsed",
      nonce: NONCE,
      client_nonce: null,
    });
    expect(chat.stream).toBe(false);
    expect(echo).toMatchObject({ instructions: "Be brief.", max_output_tokens: 32, temperature: 0.5, top_p: 0.9, tool_choice: "auto", tools: [], text: { format: { type: "text" } } });
  });

  it("input items: text parts joined, a reasoning item onto the next assistant turn, function calls joining it, outputs as tool messages", () => {
    const { chat } = parse({
      input: [
        { role: "developer", content: "Use tools." },
        { type: "message", role: "user", content: [{ type: "input_text", text: "Weather" }, { type: "input_text", text: "in Paris?" }] },
        { type: "reasoning", id: "rs_1", summary: [], content: [{ type: "reasoning_text", text: "think" }] },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "Checking." }] },
        { type: "function_call", id: "fc_1", call_id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' },
        { type: "function_call", call_id: "call_2", name: "get_weather", arguments: '{"city":"Lyon"}' },
        { type: "function_call_output", call_id: "call_1", output: "18C" },
        { type: "function_call_output", call_id: "call_2", output: [{ type: "input_text", text: "20C" }] },
      ],
      tools: [{ type: "function", name: "get_weather", parameters: WEATHER }],
    });
    expect(chat.body.messages).toEqual([
      { role: "system", content: "Use tools." },
      { role: "user", content: "Weather\nin Paris?" },
      {
        role: "assistant",
        content: "Checking.",
        reasoning_content: "think",
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
          { id: "call_2", type: "function", function: { name: "get_weather", arguments: '{"city":"Lyon"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: "18C" },
      { role: "tool", tool_call_id: "call_2", content: "20C" },
    ]);
    expect(chat.body.tools).toEqual([{ type: "function", function: { name: "get_weather", parameters: WEATHER } }]);
  });

  it("tool_choice, parallel_tool_calls, text.format and reasoning.effort none become their chat fields", () => {
    const tools = [{ type: "function", name: "get_weather", parameters: WEATHER, strict: true }];
    const forced = parse({ input: "x", tools, tool_choice: { type: "function", name: "get_weather" }, parallel_tool_calls: false, reasoning: { effort: "none" } }).chat.body;
    expect([forced.tool_choice, forced.parallel_tool_calls, forced.enable_thinking]).toEqual([{ type: "function", function: { name: "get_weather" } }, false, false]);
    const json = parse({ input: "x", text: { format: { type: "json_schema", name: "city", schema: WEATHER, strict: true } } }).chat.body;
    expect(json.response_format).toEqual({ type: "json_schema", json_schema: { name: "city", schema: WEATHER, strict: true } });
    expect(parse({ input: "x", text: { format: { type: "json_object" } } }).chat.body.response_format).toEqual({ type: "json_object" });
    expect(parse({ input: "x", stream: true, store: false, include: [], truncation: "disabled", service_tier: "auto" }).chat.stream).toBe(true);
  });

  it("prompt_cache_key and cache_prompt act as on chat: the scope the route read is sealed, none under cache_prompt false", () => {
    const scope = "ab".repeat(32);
    const scoped = parseResponsesRequest({ model: "qwen3-4b", input: "hi", prompt_cache_key: "conv-1" }, { catalog: CATALOG, nonce: NONCE, cacheScope: scope });
    expect([scoped.chat.body.cache_scope, scoped.chat.cacheScope]).toEqual([scope, scope]);
    const off = parseResponsesRequest({ model: "qwen3-4b", input: "hi", cache_prompt: false }, { catalog: CATALOG, nonce: NONCE, cacheScope: scope });
    expect(off.chat.body).toMatchObject({ cache_prompt: false });
    expect(off.chat.body).not.toHaveProperty("cache_scope");
    expect(fault({ model: "qwen3-4b", input: "hi", prompt_cache_key: 5 }).slice(0, 3)).toEqual([400, "invalid_type", "prompt_cache_key"]);
  });
});

describe("Responses: refusals", () => {
  it("previous_response_id, conversation and store: true are 400s saying svc keeps no conversation state", () => {
    for (const [field, value] of [["previous_response_id", "resp_1"], ["conversation", "conv_1"], ["store", true]] as const) {
      const [status, code, param, message] = fault({ input: "x", [field]: value });
      expect([status, code, param]).toEqual([400, "unsupported_parameter", field]);
      expect(message).toContain("svc keeps no conversation state");
    }
    const [, code, param, message] = fault({ input: [{ type: "item_reference", id: "msg_1" }] });
    expect([code, param]).toEqual(["unsupported_parameter", "input[0]"]);
    expect(message).toContain("svc keeps no conversation state");
  });

  it("every refused field is a 400 naming it", () => {
    for (const field of RESPONSES_REFUSED_FIELDS) {
      const [status, code, param] = fault({ input: "x", [field]: field === "include" ? ["reasoning.encrypted_content"] : "x-unsupported" });
      expect([field, status, code, param]).toEqual([field, 400, "unsupported_parameter", field]);
    }
  });

  it("hosted tools are 400s naming the tool", () => {
    for (const type of ["web_search", "file_search", "code_interpreter", "computer_use_preview"]) {
      const [status, code, param, message] = fault({ input: "x", tools: [{ type: "function", name: "f" }, { type }] });
      expect([status, code, param]).toEqual([400, "unsupported_parameter", "tools[1].type"]);
      expect(message).toContain(`"${type}"`);
    }
    expect(fault({ input: "x", tool_choice: { type: "web_search" } }).slice(1, 3)).toEqual(["unsupported_parameter", "tool_choice"]);
  });

  it("input parts and item types svc cannot read are 400s naming them", () => {
    expect(fault({ input: [{ role: "user", content: [{ type: "input_image", image_url: "x" }] }] }).slice(1, 3)).toEqual(["unsupported_content_part", "input[0].content[0].type"]);
    expect(fault({ input: [{ type: "web_search_call", id: "ws_1" }] }).slice(1, 3)).toEqual(["unsupported_parameter", "input[0].type"]);
    expect(fault({ input: [{ role: "user", content: [{ type: "input_text" }] }] }).slice(1, 3)).toEqual(["missing_field", "input[0].content[0].text"]);
    expect(fault({ input: [{ role: "assistant", content: [{ type: "input_text", text: "x" }] }] }).slice(1, 3)).toEqual(["unsupported_content_part", "input[0].content[0].type"]);
  });

  it("faults the chat parser finds are named by the Responses field", () => {
    expect(fault({ input: "x", max_output_tokens: 0 }).slice(1, 3)).toEqual(["invalid_value", "max_output_tokens"]);
    expect(fault({ input: "x", temperature: 3 }).slice(1, 3)).toEqual(["invalid_value", "temperature"]);
    expect(fault({ input: "x", tools: [{ type: "function", name: "bad name" }] }).slice(1, 3)).toEqual(["invalid_value", "tools[0].name"]);
    expect(fault({ input: "x", tools: [{ type: "function", name: "f" }], tool_choice: { type: "function", name: "g" } }).slice(1, 3)).toEqual(["invalid_value", "tool_choice.name"]);
    expect(fault({ input: "x", text: { format: { type: "json_schema", name: "bad name" } } }).slice(1, 3)).toEqual(["invalid_value", "text.format.name"]);
    expect(fault({ input: [{ role: "user", content: 5 }] }).slice(1, 3)).toEqual(["invalid_type", "input[0].content"]);
    expect(fault({ input: [{ type: "function_call_output", call_id: "nope", output: "x" }] })[2]).toBe("input[0]");
    expect(fault({})).toEqual([400, "missing_field", "input", "input is required."]);
  });
});

describe("Responses: logprobs (issue 43)", () => {
  const logprobs = ["message.output_text.logprobs"];
  it("include message.output_text.logprobs seals top_logprobs (0 when unset); top_logprobs alone asks for nothing, as on OpenAI", () => {
    expect(parse({ model: "qwen3-4b", input: "x", include: logprobs, top_logprobs: 3 }).chat.body.top_logprobs).toBe(3);
    expect(parse({ model: "qwen3-4b", input: "x", include: logprobs }).chat.body.top_logprobs).toBe(0);
    expect(parse({ model: "qwen3-4b", input: "x", top_logprobs: 3 }).chat.body).not.toHaveProperty("top_logprobs");
    expect(parse({ model: "qwen3-4b", input: "x", include: [] }).chat.body).not.toHaveProperty("top_logprobs");
  });

  it("top_logprobs past 20, another include beside it, or an answer past the entries' bound is a 400 naming the Responses field", () => {
    expect(fault({ model: "qwen3-4b", input: "x", include: logprobs, top_logprobs: 21 }).slice(0, 3)).toEqual([400, "invalid_value", "top_logprobs"]);
    expect(fault({ model: "qwen3-4b", input: "x", include: [...logprobs, "reasoning.encrypted_content"] }).slice(0, 3)).toEqual([400, "unsupported_parameter", "include"]);
    expect(fault({ model: "qwen3-4b", input: "x", include: logprobs, top_logprobs: 20, max_output_tokens: 3121 }).slice(0, 3)).toEqual([400, "invalid_value", "max_output_tokens"]);
  });
});
