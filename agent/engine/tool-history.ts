// Maps OpenAI chat history with tool calls (assistant `tool_calls`, `role: "tool"` results) and `tools` onto
// node-llama-cpp chat history for QwenChatWrapper, so it renders what Qwen3's official template renders.
import {
  LlamaText,
  QwenChatWrapper,
  SpecialTokensText,
  type ChatHistoryItem,
  type ChatModelFunctionCall,
  type ChatModelFunctions,
  type ChatModelResponse,
  type ChatModelSegment,
} from "node-llama-cpp";
import { historyProblems, type FunctionTool, type HistoryProblem, type ToolCall, type ToolHistoryMessage } from "../../src/session/tools.ts";
import { THINK_CLOSE, THINK_OPEN, TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from "./qwen3-markup.ts";

export type MessageContent = string | null | undefined | readonly { type: "text"; text: string }[];

export type HistoryToolCall = ToolCall;

export type HistoryMessage =
  | { role: "system" | "developer" | "user"; content: MessageContent }
  | { role: "assistant"; content?: MessageContent; tool_calls?: readonly HistoryToolCall[]; reasoning_content?: string | null }
  | { role: "tool"; tool_call_id: string; content: MessageContent };

export type { FunctionTool, HistoryProblem };

export interface ToolHistory {
  history: ChatHistoryItem[];
  /** For `generateContextState({ availableFunctions })`; undefined without tools. */
  functions?: ChatModelFunctions;
  problems: HistoryProblem[];
}

/**
 * The wrapper to render this history with: tool results as plain text (not JSON-quoted), and with reasoning off,
 * the official `enable_thinking=false` prompt (an empty think block opening the answer).
 */
export function qwenWrapper({ reasoning = true }: { reasoning?: boolean } = {}): QwenChatWrapper {
  // _flatFunctionResultString is internal and untyped: without it a string result renders JSON-quoted
  return new QwenChatWrapper({ thoughts: reasoning ? "auto" : "discourage", _flatFunctionResultString: true } as ConstructorParameters<typeof QwenChatWrapper>[0]);
}

const textOf = (content: MessageContent): string =>
  typeof content === "string" ? content : Array.isArray(content) ? content.map((part) => part.text).join("") : "";

/** The call exactly as Qwen3 writes it, arguments verbatim: the official template also inserts the string as given. */
function rawCall(call: HistoryToolCall): ChatModelFunctionCall["rawCall"] {
  const { name, arguments: args } = call.function;
  return LlamaText([new SpecialTokensText(TOOL_CALL_OPEN), `\n{"name": "${name}", "arguments": `, args, "}\n", new SpecialTokensText(TOOL_CALL_CLOSE)]).toJSON();
}

function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text; // rendered verbatim through rawCall all the same, as the official template does
  }
}

export function toToolHistory(messages: readonly HistoryMessage[], tools?: readonly FunctionTool[]): ToolHistory {
  const problems = historyProblems(messages as readonly ToolHistoryMessage[], tools);
  const functions = toFunctions(tools);
  const history: ChatHistoryItem[] = [];
  /** Calls still waiting for their tool message, by id. */
  const pending = new Map<string, ChatModelFunctionCall>();

  messages.forEach((message, i) => {
    if (message.role === "tool") {
      const call = pending.get(message.tool_call_id);
      if (call) (call.result = textOf(message.content)), pending.delete(message.tool_call_id);
      return;
    }
    pending.clear();
    if (message.role !== "assistant") {
      history.push(message.role === "user" ? { type: "user", text: textOf(message.content) } : { type: "system", text: textOf(message.content) });
      return;
    }
    // after tool results the answer (or the next round of calls) continues the same model item, as Qwen3 renders it
    const last = history.at(-1);
    const continues = messages[i - 1]?.role === "tool" && last?.type === "model";
    const item: ChatModelResponse = continues ? (last as ChatModelResponse) : { type: "model", response: [] };
    if (!continues) history.push(item);
    const calls = message.tool_calls ?? [];
    const { reasoning, content } = message.reasoning_content ? { reasoning: message.reasoning_content, content: textOf(message.content) } : fromThink(textOf(message.content));
    const answer = reasoning === "" ? content : content.replace(/^\n+/, "");
    if (reasoning !== "") item.response.push(thought(reasoning.replace(/^\n+|\n+$/g, "")));
    // the official template puts "\n" between text and the first call; the wrapper puts nothing
    if (answer !== "") item.response.push(calls.length > 0 ? `${answer}\n` : answer);
    calls.forEach((call, j) => {
      const entry: ChatModelFunctionCall = { type: "functionCall", name: call.function.name, params: parseArguments(call.function.arguments), result: undefined, rawCall: rawCall(call) };
      // a later round renders as its own assistant turn, after the previous round's results
      if (j === 0 && item.response.some((r) => typeof r === "object" && r.type === "functionCall")) entry.startsNewChunk = true;
      item.response.push(entry);
      pending.set(call.id, entry);
    });
  });
  // the model writes next: a new turn, unless the last item is a round of calls now answered by their results
  const lastMessage = messages.at(-1);
  if (lastMessage?.role !== "tool") history.push({ type: "model", response: [] });
  return { history, functions, problems };
}

/** An earlier answer's `<think>` block, read back the way the official template does (content.split('</think>')). */
function fromThink(text: string): { reasoning: string; content: string } {
  if (!text.includes(THINK_CLOSE)) return { reasoning: "", content: text };
  const parts = text.split(THINK_CLOSE);
  return { reasoning: parts[0]!.replace(/\n+$/, "").split(THINK_OPEN).at(-1)!.replace(/^\n+/, ""), content: parts.at(-1)!.replace(/^\n+/, "") };
}

/**
 * A kept thought, ending "</think>\n\n" like the official template (the wrapper alone ends it at "</think>"); the
 * newlines live in the segment so that they go with it when the wrapper drops thoughts of earlier turns.
 */
function thought(text: string): ChatModelSegment {
  const raw = LlamaText([new SpecialTokensText(`${THINK_OPEN}\n`), text, new SpecialTokensText(`\n${THINK_CLOSE}\n\n`)]).toJSON();
  return { type: "segment", segmentType: "thought", text, ended: true, raw };
}

function toFunctions(tools: readonly FunctionTool[] | undefined): ChatModelFunctions | undefined {
  if (!tools || tools.length === 0) return undefined;
  const functions: Record<string, ChatModelFunctions[string]> = {};
  for (const tool of tools) {
    const { name, description, parameters } = tool.function;
    functions[name] = { ...(description !== undefined ? { description } : {}), ...(parameters !== undefined ? { params: parameters as never } : {}) };
  }
  return functions;
}
