// The special tokens that must not be sampled inside tool-call arguments. A grammar's string rule accepts any token
// whose text fits, and `<think>`, `</think>`, `<tool_call>`… fit (MEMO gotcha 8): ban them by id while a call is open.
import type { LlamaModel, Token } from "node-llama-cpp";
import { QWEN3_MARKUP } from "./qwen3-markup.ts";

export type SpecialTokenVocab = Pick<LlamaModel, "iterateAllTokens" | "getTokenAttributes" | "isEogToken" | "detokenize" | "tokenize">;


/**
 * Ids of control and user-defined tokens that have text and do not end generation: none of them belongs inside a
 * JSON argument. (Ending tokens stay: the grammar itself allows them only once the call is complete.)
 */
export function argumentTokenBan(model: SpecialTokenVocab): Token[] {
  const banned = new Set<Token>();
  for (const token of model.iterateAllTokens()) {
    const attributes = model.getTokenAttributes(token);
    if ((attributes.control || attributes.userDefined) && !model.isEogToken(token) && model.detokenize([token], true) !== "") banned.add(token);
  }
  // iterateAllTokens lists nothing when the GGUF's token list was not read: fall back to Qwen3's own markup, by text
  for (const text of QWEN3_MARKUP) {
    const tokens = model.tokenize(text, true);
    if (tokens.length === 1 && !model.isEogToken(tokens[0])) banned.add(tokens[0]!);
  }
  return [...banned].sort((a, b) => a - b);
}

/** The single token spelled `text` (e.g. "<tool_call>", to ban for tool_choice "none"), if the vocabulary has one. */
export function singleToken(model: Pick<LlamaModel, "tokenize">, text: string): Token | undefined {
  const tokens = model.tokenize(text, true);
  return tokens.length === 1 ? tokens[0] : undefined;
}
