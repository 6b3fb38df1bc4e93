// Tool calling and reasoning as they travel in the sealed request (OpenAI's shapes): the tools offered, the
// caller's choice among them, the calls of earlier turns, and the rules a history must keep to be rendered.
import * as z from "zod";
import { MAX_CALL_ID_LENGTH, type ToolCall, ToolCallSchema } from "../receipt/answer-record.ts";

export { MAX_CALL_ID_LENGTH, type ToolCall, ToolCallSchema };

/** OpenAI's rule for a function name, and its limit on tools per request. */
export const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
export const MAX_TOOLS = 128;

export const FunctionToolSchema = z.strictObject({
  type: z.literal("function"),
  function: z.strictObject({
    name: z.string().regex(TOOL_NAME),
    description: z.string().optional(),
    /** JSON Schema of the arguments; absent means none (`{}`), as OpenAI says. */
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().optional(),
  }),
});
export type FunctionTool = z.infer<typeof FunctionToolSchema>;

export const NamedToolChoiceSchema = z.strictObject({ type: z.literal("function"), function: z.strictObject({ name: z.string().regex(TOOL_NAME) }) });
export const ToolChoiceSchema = z.union([z.enum(["auto", "none", "required"]), NamedToolChoiceSchema]);
export type ToolChoice = z.infer<typeof ToolChoiceSchema>;

/**
 * Each present only when the caller set it, so a plain request seals the same bytes as before these existed.
 * `reasoning_format: "parsed"` returns the `<think>` block apart as `reasoning_content`; `enable_thinking: false`
 * renders the prompt in Qwen3's no-think form.
 */
export const ToolingSchema = z.strictObject({
  tools: z.array(FunctionToolSchema).min(1).max(MAX_TOOLS).optional(),
  tool_choice: ToolChoiceSchema.optional(),
  parallel_tool_calls: z.boolean().optional(),
  reasoning_format: z.literal("parsed").optional(),
  enable_thinking: z.literal(false).optional(),
});
export type Tooling = z.infer<typeof ToolingSchema>;

/** A history message as far as the tool rules care. */
export type ToolHistoryMessage =
  | { role: string; content?: unknown; tool_calls?: readonly ToolCall[] }
  | { role: "tool"; tool_call_id: string; content?: unknown };

/** A fault the gateway answers with a 400, `path` naming the field (`messages[3].tool_call_id`). */
export interface HistoryProblem {
  path: string;
  message: string;
}

/**
 * What makes a tool history unrenderable, in document order: repeated tool names, calls that name no tool,
 * repeated call ids, tool messages that answer no earlier call, and calls left unanswered before the next turn.
 */
export function historyProblems(messages: readonly ToolHistoryMessage[], tools?: readonly FunctionTool[]): HistoryProblem[] {
  const problems: HistoryProblem[] = [];
  const names = new Set<string>();
  tools?.forEach((tool, i) => {
    if (names.has(tool.function.name)) problems.push({ path: `tools[${i}].function.name`, message: `repeats the tool name ${JSON.stringify(tool.function.name)}` });
    names.add(tool.function.name);
  });
  const pending = new Map<string, string>(); // call id → its path, until a tool message answers it
  const seenIds = new Set<string>();
  const unanswered = () => {
    for (const path of pending.values()) problems.push({ path, message: "has no tool message answering it" });
    pending.clear();
  };
  messages.forEach((message, i) => {
    const at = `messages[${i}]`;
    if (message.role === "tool" && "tool_call_id" in message) {
      const id = message.tool_call_id;
      if (pending.has(id)) pending.delete(id);
      else problems.push({ path: `${at}.tool_call_id`, message: `answers no tool call of the assistant message before it (${JSON.stringify(id)})` });
      return;
    }
    unanswered(); // every call must be answered before anything else follows
    const calls = "tool_calls" in message ? (message.tool_calls ?? []) : [];
    calls.forEach((call, j) => {
      const path = `${at}.tool_calls[${j}]`;
      if (seenIds.has(call.id)) problems.push({ path: `${path}.id`, message: `repeats the tool call id ${JSON.stringify(call.id)}` });
      seenIds.add(call.id);
      if (tools && !names.has(call.function.name)) problems.push({ path: `${path}.function.name`, message: `names no tool in tools (${JSON.stringify(call.function.name)})` });
      pending.set(call.id, path);
    });
  });
  unanswered();
  return problems;
}
