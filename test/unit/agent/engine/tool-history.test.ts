// OpenAI tool-call history into QwenChatWrapper (agent/engine/tool-history.ts), checked byte for byte against the official
// Qwen3 chat template rendered by @huggingface/jinja (what llama.cpp and transformers render), and its 400s.
import { Template } from "@huggingface/jinja";
import { describe, expect, it } from "vitest";
import { qwenWrapper } from "../../../../agent/engine/prompt.ts";
import { toToolHistory, type FunctionTool, type HistoryMessage } from "../../../../agent/engine/tool-history.ts";
import { QWEN3_OFFICIAL_TEMPLATE } from "../../../fixtures/qwen3-template.ts";

const TOOLS: FunctionTool[] = [
  { type: "function", function: { name: "get_weather", description: "Get the weather for a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } },
  { type: "function", function: { name: "get_time", description: "Current time in a timezone", parameters: { type: "object", properties: { tz: { type: "string" } } } } },
];
const call = (id: string, name: string, args: string) => ({ id, type: "function" as const, function: { name, arguments: args } });

function official(messages: HistoryMessage[], tools?: FunctionTool[], enableThinking?: boolean): string {
  return new Template(QWEN3_OFFICIAL_TEMPLATE).render({
    messages: messages as never,
    ...(tools ? { tools: tools as never } : {}),
    add_generation_prompt: true,
    ...(enableThinking === undefined ? {} : { enable_thinking: enableThinking }),
  });
}

function wrapper(messages: HistoryMessage[], tools?: FunctionTool[], reasoning = true): string {
  const { history, functions, problems } = toToolHistory(messages, tools);
  expect(problems).toEqual([]);
  return qwenWrapper({ reasoning }).generateContextState({ chatHistory: history, availableFunctions: functions }).contextText.toString();
}

const TWO_TOOLS: HistoryMessage[] = [
  { role: "system", content: "Be brief." },
  { role: "user", content: "Weather and time in Paris?" },
  { role: "assistant", content: null, tool_calls: [call("c1", "get_weather", '{"city": "Paris"}'), call("c2", "get_time", '{"tz":"Europe/Paris"}')] },
  { role: "tool", tool_call_id: "c1", content: "18C, sunny" },
  { role: "tool", tool_call_id: "c2", content: '{"time": "14:02"}' },
];

const SAME: [string, HistoryMessage[], FunctionTool[]?][] = [
  ["two parallel calls and their results, the tools block in the system prompt", TWO_TOOLS, TOOLS],
  ["text before the calls", [
    { role: "user", content: "Weather?" },
    { role: "assistant", content: "Let me check.", tool_calls: [call("c1", "get_weather", '{"city": "Paris"}')] },
    { role: "tool", tool_call_id: "c1", content: "sunny" },
  ], TOOLS],
  ["two rounds of calls: each its own assistant turn", [
    { role: "user", content: "Paris then Rome" },
    { role: "assistant", content: "", tool_calls: [call("a", "get_weather", '{"city": "Paris"}')] },
    { role: "tool", tool_call_id: "a", content: "sunny" },
    { role: "assistant", content: null, tool_calls: [call("b", "get_weather", '{"city": "Rome"}')] },
    { role: "tool", tool_call_id: "b", content: "rain" },
  ], TOOLS],
  ["the answer after the results, then a new question", [
    { role: "user", content: "Weather?" },
    { role: "assistant", content: null, tool_calls: [call("a", "get_weather", '{"city": "Paris"}')] },
    { role: "tool", tool_call_id: "a", content: "sunny" },
    { role: "assistant", content: "It is sunny." },
    { role: "user", content: "Thanks" },
  ], TOOLS],
  ["reasoning kept in the current turn, before its calls and before its answer", [
    { role: "user", content: "Weather?" },
    { role: "assistant", content: null, reasoning_content: "I should call the tool.", tool_calls: [call("a", "get_weather", '{"city": "Paris"}')] },
    { role: "tool", tool_call_id: "a", content: "sunny" },
  ], TOOLS],
  ["reasoning written inline as <think> in an earlier turn: dropped, as the template does", [
    { role: "user", content: "Q1" },
    { role: "assistant", content: "<think>\nhmm\n</think>\n\nA1", tool_calls: [call("a", "get_time", "{}")] },
    { role: "tool", tool_call_id: "a", content: "noon" },
    { role: "assistant", content: "<think>\nnow I know\n</think>\n\nIt is noon." },
    { role: "user", content: "Q2" },
  ], TOOLS],
  ["calls in history without tools: no tools block", [
    { role: "user", content: "Hi" },
    { role: "assistant", content: null, tool_calls: [call("a", "ping", "{}")] },
    { role: "tool", tool_call_id: "a", content: "pong" },
  ]],
  ["text-part content and a developer message", [
    { role: "developer", content: [{ type: "text", text: "Be " }, { type: "text", text: "kind." }] },
    { role: "user", content: [{ type: "text", text: "Hi" }] },
  ]],
];

describe("tool history renders as the official Qwen3 template does", () => {
  it.each(SAME)("%s", (_, messages, tools) => {
    // the official template reads "developer" as nothing; it is a system message
    const forTemplate = messages.map((m) => (m.role === "developer" ? { ...m, role: "system" as const } : m)).map((m) => ({ ...m, content: typeof m.content === "object" && m.content !== null ? m.content.map((p) => p.text).join("") : m.content }));
    expect(wrapper(messages, tools)).toBe(official(forTemplate as HistoryMessage[], tools));
  });

  it("with reasoning off: the enable_thinking=false prompt, after tool results too", () => {
    expect(wrapper(TWO_TOOLS, TOOLS, false)).toBe(official(TWO_TOOLS, TOOLS, false));
    const plain: HistoryMessage[] = [{ role: "user", content: "Why?" }];
    expect(wrapper(plain, undefined, false)).toBe(official(plain, undefined, false));
  });

  it("renders the arguments exactly as given (compact stays compact), results as plain text", () => {
    const text = wrapper(TWO_TOOLS, TOOLS);
    expect(text).toContain('{"name": "get_time", "arguments": {"tz":"Europe/Paris"}}');
    expect(text).toContain("<tool_response>\n18C, sunny\n</tool_response>");
  });

  it("ends with the round of calls when the last message is a tool result: no stray empty assistant turn", () => {
    expect(wrapper(TWO_TOOLS, TOOLS).endsWith("</tool_response><|im_end|>\n<|im_start|>assistant\n")).toBe(true);
    expect(wrapper(TWO_TOOLS, TOOLS)).not.toContain("<|im_start|>assistant\n<|im_end|>");
  });

  it("known divergences: a second leading system message joins the first; tool objects render name, description, parameters only", () => {
    const twoSystems: HistoryMessage[] = [{ role: "system", content: "A" }, { role: "system", content: "B" }, { role: "user", content: "Hi" }];
    expect(wrapper(twoSystems, TOOLS)).toContain("<|im_start|>system\nA\n\nB\n\n# Tools");
    expect(official(twoSystems, TOOLS)).toContain("</tool_call><|im_end|>\n<|im_start|>system\nB<|im_end|>");
    const strict: FunctionTool[] = [{ type: "function", function: { ...TOOLS[1]!.function, strict: true } }];
    expect(official([{ role: "user", content: "Hi" }], strict)).toContain('"strict": true');
    expect(wrapper([{ role: "user", content: "Hi" }], strict)).not.toContain("strict");
  });
});

describe("history problems, for 400s", () => {
  const problems = (messages: HistoryMessage[], tools?: FunctionTool[]) => toToolHistory(messages, tools).problems;

  it("a tool message that answers no earlier call", () => {
    expect(problems([{ role: "user", content: "Hi" }, { role: "tool", tool_call_id: "nope", content: "x" }])).toEqual([
      { path: "messages[1].tool_call_id", message: expect.stringContaining("answers no tool call") },
    ]);
    // answered twice, or after a user message broke the round
    const twice: HistoryMessage[] = [TWO_TOOLS[1]!, TWO_TOOLS[2]!, TWO_TOOLS[3]!, TWO_TOOLS[4]!, { role: "tool", tool_call_id: "c1", content: "again" }];
    expect(problems(twice, TOOLS).map((p) => p.path)).toEqual(["messages[4].tool_call_id"]);
  });

  it("a call to a tool not in tools", () => {
    const messages: HistoryMessage[] = [{ role: "user", content: "Hi" }, { role: "assistant", content: null, tool_calls: [call("a", "get_weather", "{}"), call("b", "launch", "{}")] }, { role: "tool", tool_call_id: "a", content: "" }, { role: "tool", tool_call_id: "b", content: "" }];
    expect(problems(messages, TOOLS)).toEqual([{ path: "messages[1].tool_calls[1].function.name", message: expect.stringContaining("launch") }]);
    expect(problems(messages)).toEqual([]); // without tools there is nothing to check the name against
  });

  it("a call nobody answered before the conversation moved on", () => {
    const messages: HistoryMessage[] = [{ role: "user", content: "Hi" }, { role: "assistant", content: null, tool_calls: [call("a", "get_time", "{}"), call("b", "get_time", "{}")] }, { role: "tool", tool_call_id: "a", content: "" }, { role: "user", content: "?" }];
    expect(problems(messages, TOOLS)).toEqual([{ path: "messages[1].tool_calls[1]", message: "has no tool message answering it" }]);
  });

  it("repeated call ids and tool names", () => {
    const messages: HistoryMessage[] = [
      { role: "user", content: "Hi" },
      { role: "assistant", content: null, tool_calls: [call("a", "get_time", "{}")] }, { role: "tool", tool_call_id: "a", content: "" },
      { role: "assistant", content: null, tool_calls: [call("a", "get_time", "{}")] }, { role: "tool", tool_call_id: "a", content: "" },
    ];
    expect(problems(messages, [...TOOLS, TOOLS[0]!]).map((p) => p.path)).toEqual(["tools[2].function.name", "messages[3].tool_calls[0].id"]);
  });
});
