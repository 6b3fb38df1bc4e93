// Maps OpenAI chat history with tool calls (assistant `tool_calls`, `role: "tool"` results) and `tools` onto
// node-llama-cpp chat history for QwenChatWrapper, so it renders what Qwen3's official template renders.
// Types only: the daemon plans each turn (agent/engine/turn.ts) with this module, and a process that runs no llama
// engine (the synthetic one, the bench's swarm) need not load node-llama-cpp for it.
import type { ChatHistoryItem, ChatModelFunctionCall, ChatModelFunctions, ChatModelResponse, ChatModelSegment, LlamaTextJSONValue } from "node-llama-cpp";
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

const textOf = (content: MessageContent): string =>
  typeof content === "string" ? content : Array.isArray(content) ? content.map((part) => part.text).join("") : "";

/** The call exactly as Qwen3 writes it, arguments verbatim: the official template also inserts the string as given. */
function rawCall(call: HistoryToolCall): ChatModelFunctionCall["rawCall"] {
  const { name, arguments: args } = call.function;
  return llamaTextJson([{ special: TOOL_CALL_OPEN }, `\n{"name": "${name}", "arguments": `, args, "}\n", { special: TOOL_CALL_CLOSE }]);
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
  const raw = llamaTextJson([{ special: `${THINK_OPEN}\n` }, text, { special: `\n${THINK_CLOSE}\n\n` }]);
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

/**
 * `LlamaText([...]).toJSON()` for plain text and special-token text, as node-llama-cpp builds it: empty parts dropped
 * and neighbours of one kind joined. Every use here starts with special text, so the result is never a bare string.
 */
function llamaTextJson(parts: ReadonlyArray<string | { special: string }>): LlamaTextJSONValue[] {
  const out: LlamaTextJSONValue[] = [];
  for (const part of parts) {
    const value = typeof part === "string" ? part : part.special;
    if (value === "") continue;
    const last = out.at(-1);
    if (typeof part === "string" && typeof last === "string") out[out.length - 1] = last + value;
    else if (typeof part !== "string" && typeof last === "object" && last.type === "specialTokensText") out[out.length - 1] = { type: "specialTokensText", value: last.value + value };
    else out.push(typeof part === "string" ? value : { type: "specialTokensText", value });
  }
  return out;
}
