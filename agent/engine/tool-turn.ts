// Tool calling's hold on sampling, as a turn's plan asks it (agent/engine/turn.ts): markup banned inside a call's
// arguments, `<tool_call>` itself banned under "none", and for "auto" the call grammar that takes over once the
// model writes `<tool_call>` (a forced turn's grammar holds from the first token, as a JSON answer's does).
import { LlamaGrammarEvaluationState, type LlamaGrammar, type LlamaModel, type SequenceEvaluateOptions, type Token } from "node-llama-cpp";
import type { AnswerStream } from "./answer/answer-stream.ts";
import { tokenBias } from "./sampler.ts";
import { singleToken } from "./special-tokens.ts";
import { TOOL_CALL_OPEN } from "./qwen3-markup.ts";
import type { Turn } from "./turn.ts";

export interface ToolModel {
  model: LlamaModel;
  vocabularySize: number;
  /** Markup tokens that never belong inside a call's arguments (special-tokens.ts). */
  argumentBan: readonly Token[];
}

/** The caller's logit_bias with tool calling's bans added, for a turn that offers tools. */
export function toolBias({ model, vocabularySize, argumentBan }: ToolModel, turn: Turn, options: SequenceEvaluateOptions, stream: AnswerStream): void {
  const { mode, request } = turn;
  if (mode === "off") return;
  const sampler = { tokenizer: model.tokenizer, vocabularySize };
  if (mode === "none") {
    const token = singleToken(model, TOOL_CALL_OPEN);
    options.tokenBias = tokenBias(request.logit_bias, sampler, token === undefined ? [] : [token]);
    return;
  }
  const outside = tokenBias(request.logit_bias, sampler);
  const inside = tokenBias(request.logit_bias, sampler, argumentBan);
  options.tokenBias = () => (stream.insideCall ? inside : outside);
}

/** "auto": no grammar until the model writes `<tool_call>` outside its reasoning; returns the trigger to feed each decoded piece. */
export function lazyGrammar(model: LlamaModel, grammar: LlamaGrammar, options: SequenceEvaluateOptions): (piece: string, answer: AnswerStream) => void {
  let state: LlamaGrammarEvaluationState | undefined;
  let tail = "";
  options.grammarEvaluationState = () => state;
  return (piece, answer) => {
    if (state !== undefined || answer.inReasoning) return;
    tail = (tail + piece).slice(-TOOL_CALL_OPEN.length);
    if (tail === TOOL_CALL_OPEN) state = new LlamaGrammarEvaluationState({ model, grammar });
  };
}
