// Renders OpenAI-style messages into prompt tokens with the model's own chat template: exactly the messages
// given, no default system prompt, then the assistant generation prompt; or, as a turn's plan asks, in Qwen3's
// tool and no-think forms.
import { QwenChatWrapper, type ChatHistoryItem, type ChatModelResponse, type ChatWrapper, type LlamaModel, type Token } from "node-llama-cpp";
import { ApiError } from "../../src/errors.ts";
import type { ChatMessage } from "../../src/session/sealed-request.ts";
import { THINK_CLOSE, THINK_OPEN } from "./qwen3-markup.ts";
import type { Turn } from "./turn.ts";

/**
 * An earlier assistant turn's `<think>…</think>` becomes a thought segment, so the template can drop it the
 * way Qwen3's own template does; the answer after it stays as text.
 */
function modelResponse(content: string): ChatModelResponse {
  const close = content.lastIndexOf(THINK_CLOSE);
  if (close < 0) return { type: "model", response: [content] };
  const before = content.slice(0, close);
  const open = before.trimStart().startsWith(THINK_OPEN) ? before.indexOf(THINK_OPEN) + THINK_OPEN.length : 0;
  const thought = before.slice(open).replace(/^\n+|\n+$/g, "");
  const answer = content.slice(close + THINK_CLOSE.length).replace(/^\n+/, "");
  return {
    type: "model",
    response: [{ type: "segment", segmentType: "thought", text: thought, ended: true }, ...(answer ? [answer] : [])],
  };
}

export function toChatHistory(messages: readonly ChatMessage[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = messages.map((m) => {
    if (m.role === "system") return { type: "system", text: m.content };
    if (m.role === "user") return { type: "user", text: m.content };
    // a turn with tool messages is planned in Qwen3's form (agent/engine/turn.ts), rendered by renderTurnPrompt
    if (m.role === "tool") throw new Error("a tool message needs the tool template (renderTurnPrompt)");
    return modelResponse(m.content ?? "");
  });
  history.push({ type: "model", response: [] }); // the turn the model is about to write
  return history;
}

/** The rendered prompt as tokens (also what `prompt_tokens` counts). */
export function renderPrompt(model: LlamaModel, wrapper: ChatWrapper, messages: readonly ChatMessage[]): Token[] {
  const { contextText } = wrapper.generateContextState({ chatHistory: toChatHistory(messages) });
  return contextText.tokenize(model.tokenizer);
}

/** The rendered prompt as text, for tests and debugging. */
export function renderPromptText(wrapper: ChatWrapper, messages: readonly ChatMessage[]): string {
  return wrapper.generateContextState({ chatHistory: toChatHistory(messages) }).contextText.toString();
}

/** The turn's prompt tokens: the plain rendering, or Qwen3's tool and no-think forms where the plan asks for them. */
export function renderTurnPrompt(model: LlamaModel, wrapper: ChatWrapper, alias: string, turn: Turn): Token[] {
  const { prompt, request } = turn;
  // POST /v1/completions: the text as it is, special tokens read as such (as llama-server reads a raw prompt)
  if (request.prompt !== undefined) return model.tokenize(request.prompt, true);
  if (prompt.form === "plain") return renderPrompt(model, wrapper, request.messages);
  if (!(wrapper instanceof QwenChatWrapper)) {
    throw new ApiError("unsupported_parameter", `${alias}'s chat template (${wrapper.wrapperName}) has no tool calling or thinking switch in svc; remove tools and enable_thinking.`, {
      param: request.tools !== undefined ? "tools" : "messages",
    });
  }
  const { contextText } = qwenWrapper({ reasoning: turn.thinks }).generateContextState({
    chatHistory: prompt.history,
    ...(prompt.functions ? { availableFunctions: prompt.functions } : {}),
  });
  return contextText.tokenize(model.tokenizer);
}

/**
 * The wrapper to render this history with: tool results as plain text (not JSON-quoted), and with reasoning off,
 * the official `enable_thinking=false` prompt (an empty think block opening the answer).
 */
export function qwenWrapper({ reasoning = true }: { reasoning?: boolean } = {}): QwenChatWrapper {
  // _flatFunctionResultString is internal and untyped: without it a string result renders JSON-quoted
  return new QwenChatWrapper({ thoughts: reasoning ? "auto" : "discourage", _flatFunctionResultString: true } as ConstructorParameters<typeof QwenChatWrapper>[0]);
}
