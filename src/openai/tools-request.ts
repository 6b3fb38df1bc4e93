// The tool-calling and reasoning fields of a chat request (OpenAI's `tools`, `tool_choice`, `parallel_tool_calls`;
// llama-server's `reasoning_format` and `chat_template_kwargs`; `reasoning_effort`), checked before any provider
// is used and reduced to what is sealed (src/session/tools.ts): only what changes the answer, only when set.
import * as z from "zod";
import { ApiError } from "../errors.ts";
import { historyProblems, MAX_CALL_ID_LENGTH, MAX_TOOLS, TOOL_NAME, type FunctionTool, type Tooling, type ToolHistoryMessage } from "../session/tools.ts";
import { SchemaBudget } from "../schema/bounds.ts";
import { checkSchema } from "./response-format.ts";

/** `reasoning_format` values: llama-server's `deepseek` and `auto` also return the reasoning apart. */
export const REASONING_FORMATS = ["none", "parsed", "deepseek", "auto"] as const;
export type ReasoningFormat = "none" | "parsed";
/** OpenAI's `reasoning_effort`: Qwen3 has no effort levels, so "none" turns thinking off and the rest leave it on. */
const EFFORTS = ["none", "minimal", "low", "medium", "high", "xhigh"] as const;

const Name = z.string().regex(TOOL_NAME, { message: "must be 1 to 64 characters a-z, A-Z, 0-9, _ or -" });

/** Request fields, spread into the body schema; null means "not set", extra keys inside are ignored. */
export const ToolFields = {
  tools: z
    .array(
      z.object({
        type: z.literal("function"),
        function: z.object({
          name: Name,
          description: z.string().nullish(),
          parameters: z.record(z.string(), z.unknown()).nullish(),
          strict: z.boolean().nullish(),
        }),
      }),
    )
    .max(MAX_TOOLS)
    .nullish(),
  tool_choice: z.union([z.enum(["auto", "none", "required"]), z.object({ type: z.literal("function"), function: z.object({ name: Name }) })]).nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  reasoning_format: z.enum(REASONING_FORMATS).nullish(),
  reasoning_effort: z.enum(EFFORTS).nullish(),
  chat_template_kwargs: z.record(z.string(), z.unknown()).nullish(),
};
type ToolBody = { [K in keyof typeof ToolFields]?: z.infer<(typeof ToolFields)[K]> };

/** A call in an assistant message of the history. */
export const HistoryCall = z.object({
  id: z.string().min(1).max(MAX_CALL_ID_LENGTH),
  type: z.literal("function"),
  function: z.object({ name: z.string().min(1), arguments: z.string() }),
});

export interface ToolingDefaults {
  /** `svc-gateway serve --reasoning-format`: what a request that names none gets. */
  reasoningFormat?: ReasoningFormat;
}

/** The sealed tooling fields, or the 400 for the first thing svc cannot serve as asked (schema work drawn from `budget`). */
export function toolingOf(b: ToolBody, messages: readonly ToolHistoryMessage[], defaults: ToolingDefaults = {}, budget = new SchemaBudget()): Tooling {
  const tooling: Tooling = {};
  const tools = b.tools != null && b.tools.length > 0 ? b.tools.map(sealedTool) : undefined;
  const choice = b.tool_choice ?? undefined;
  if (choice !== undefined && choice !== "auto" && choice !== "none" && tools === undefined) {
    throw new ApiError("invalid_value", `tool_choice ${JSON.stringify(choice)} needs tools to choose from; send tools or leave tool_choice out.`, { param: "tool_choice" });
  }
  if (typeof choice === "object" && !tools!.some((t) => t.function.name === choice.function.name)) {
    throw new ApiError("invalid_value", `tool_choice.function.name: ${JSON.stringify(choice.function.name)} is not among the tools.`, { param: "tool_choice.function.name" });
  }
  if (tools !== undefined) {
    tools.forEach((tool, i) => {
      if (tool.function.parameters !== undefined) checkSchema(tool.function.parameters, tool.function.strict === true, `tools[${i}].function.parameters`, budget);
    });
    tooling.tools = tools;
    if (choice !== undefined) tooling.tool_choice = typeof choice === "object" ? { type: "function", function: { name: choice.function.name } } : choice;
    if (b.parallel_tool_calls != null) tooling.parallel_tool_calls = b.parallel_tool_calls;
  }
  const problem = historyProblems(messages, tools)[0];
  if (problem) throw new ApiError("invalid_value", `${problem.path}: ${problem.message}.`, { param: problem.path });
  const format = b.reasoning_format == null ? (defaults.reasoningFormat ?? "none") : b.reasoning_format === "none" ? "none" : "parsed";
  if (format === "parsed") tooling.reasoning_format = "parsed";
  if (thinkingOff(b)) tooling.enable_thinking = false;
  return tooling;
}

/** The tool as sealed: what renders into the prompt or shapes the grammar, nothing set to null. */
function sealedTool(tool: NonNullable<ToolBody["tools"]>[number]): FunctionTool {
  const { name, description, parameters, strict } = tool.function;
  return {
    type: "function",
    function: {
      name,
      ...(description != null ? { description } : {}),
      ...(parameters != null ? { parameters } : {}),
      ...(strict != null ? { strict } : {}),
    },
  };
}

/** `reasoning_effort: "none"` or `chat_template_kwargs.enable_thinking: false`; other template kwargs are refused. */
function thinkingOff(b: ToolBody): boolean {
  let enable: boolean | undefined;
  for (const [key, value] of Object.entries(b.chat_template_kwargs ?? {})) {
    const param = `chat_template_kwargs.${key}`;
    if (key !== "enable_thinking") throw new ApiError("unsupported_parameter", `${param}: only enable_thinking is understood; remove it.`, { param });
    if (typeof value !== "boolean") throw new ApiError("invalid_type", `${param}: expected a boolean.`, { param });
    enable = value;
  }
  const effortOff = b.reasoning_effort === "none";
  if (enable === true && effortOff) {
    throw new ApiError("invalid_value", 'reasoning_effort "none" turns thinking off while chat_template_kwargs.enable_thinking turns it on; send one.', { param: "reasoning_effort" });
  }
  return enable === false || effortOff;
}
