// Renders OpenAI-style messages into prompt tokens with the model's own chat template: exactly the messages
// given, no default system prompt, then the assistant generation prompt.
import type { ChatHistoryItem, ChatModelResponse, ChatWrapper, LlamaModel, Token } from "node-llama-cpp";
import type { ChatMessage } from "../../src/session/sealed-request.ts";
import { THINK_CLOSE, THINK_OPEN } from "./qwen3-markup.ts";

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
    // tool turns render through agent/engine/tool-turn.ts, which sends them to Qwen3's own template
    if (m.role === "tool") throw new Error("a tool message needs the tool template (agent/engine/tool-turn.ts)");
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
