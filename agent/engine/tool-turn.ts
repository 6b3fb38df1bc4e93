// What a request with tools or reasoning controls asks of a generation: which prompt (Qwen3's own tool and
// no-think forms), whether calls are forced by a grammar from the first token, allowed behind a lazy grammar
// that takes over at `<tool_call>` ("auto"), or not allowed at all ("none").
import {
  LlamaGrammarEvaluationState,
  QwenChatWrapper,
  type ChatWrapper,
  type Llama,
  type LlamaGrammar,
  type LlamaModel,
  type SequenceEvaluateOptions,
  type Token,
} from "node-llama-cpp";
import { ApiError } from "../../src/errors.ts";
import { SchemaError } from "../../src/schema/prepare.ts";
import type { AnswerStream } from "./answer/answer-stream.ts";
import type { GenerateRequest } from "./inference.ts";
import { renderPrompt } from "./prompt.ts";
import { tokenBias } from "./sampler.ts";
import { singleToken } from "./special-tokens.ts";
import { composeToolCallBodyGrammar, composeToolCallGrammar, forcedTools, toolArgsGbnf, type GrammarTool } from "./grammar/tool-grammar.ts";
import { TOOL_CALL_OPEN } from "./qwen3-markup.ts";
import { qwenWrapper, toToolHistory, type HistoryMessage } from "./tool-history.ts";

/**
 * off: no tools; none: tools offered but not to be called; auto: the model may call; forced: it must
 * ("required", or the named function).
 */
export type ToolMode = "off" | "none" | "auto" | "forced";

export function toolMode(request: Pick<GenerateRequest, "tools" | "tool_choice">): ToolMode {
  if (request.tools === undefined) return "off";
  const choice = request.tool_choice ?? "auto";
  if (choice === "none") return "none";
  return choice === "auto" ? "auto" : "forced";
}

/**
 * Whether the model thinks before it answers. A forced call is answered at once, in Qwen3's no-think form, so
 * that even a small model returns its call within max_tokens instead of thinking until the budget runs out.
 */
export function thinks(request: GenerateRequest): boolean {
  return request.enable_thinking !== false && toolMode(request) !== "forced";
}

/** Whether the prompt needs Qwen3's tool or no-think rendering instead of the plain one. */
function needsToolTemplate(request: GenerateRequest): boolean {
  if (request.tools !== undefined || !thinks(request)) return true;
  return request.messages.some((m) => m.role === "tool" || (m.role === "assistant" && (m.tool_calls !== undefined || m.reasoning_content !== undefined)));
}

/** The prompt's tokens: the plain rendering unless tools, tool history or no-think ask for Qwen3's forms. */
export function renderTurnPrompt(model: LlamaModel, wrapper: ChatWrapper, alias: string, request: GenerateRequest): Token[] {
  if (!needsToolTemplate(request)) return renderPrompt(model, wrapper, request.messages);
  if (!(wrapper instanceof QwenChatWrapper)) {
    throw new ApiError("unsupported_parameter", `${alias}'s chat template (${wrapper.wrapperName}) has no tool calling or thinking switch in svc; remove tools and enable_thinking.`, {
      param: request.tools !== undefined ? "tools" : "messages",
    });
  }
  const { history, functions, problems } = toToolHistory(request.messages as readonly HistoryMessage[], request.tools);
  const problem = problems[0];
  // the gateway checks these first; a provider still refuses to render a history that breaks them
  if (problem) throw new ApiError("invalid_value", `${problem.path}: ${problem.message}.`, { param: problem.path });
  const offered = toolMode(request) === "none" ? undefined : functions;
  const { contextText } = qwenWrapper({ reasoning: thinks(request) }).generateContextState({
    chatHistory: history,
    ...(offered ? { availableFunctions: offered } : {}),
  });
  return contextText.tokenize(model.tokenizer);
}

function grammarTools(request: GenerateRequest): GrammarTool[] {
  return (request.tools ?? []).map((t) => ({ name: t.function.name, ...(t.function.parameters === undefined ? {} : { parameters: t.function.parameters }) }));
}

export interface ToolGrammarPlan {
  /** Cache key: the same tools and options compile to the same grammar. */
  key: string;
  /** Builds the GBNF text (a 400 naming the tool whose schema cannot compile). */
  build: (llama: Llama) => Promise<string>;
  /** forced: from the first token; lazy: once the model itself writes `<tool_call>`. */
  when: "forced" | "lazy";
}

/** The grammar a tool turn runs under, if any. */
export function toolGrammarPlan(request: GenerateRequest): ToolGrammarPlan | undefined {
  const mode = toolMode(request);
  if (mode !== "forced" && mode !== "auto") return undefined;
  const all = grammarTools(request);
  const choice = request.tool_choice;
  const picked = mode === "forced" ? forcedTools(all, choice === "required" ? "required" : { name: (choice as { function: { name: string } }).function.name }) : { tools: all };
  const parallel = request.parallel_tool_calls !== false && picked.parallel !== false;
  const key = JSON.stringify({ mode, tools: picked.tools, parallel });
  return {
    key,
    when: mode === "forced" ? "forced" : "lazy",
    build: async (llama) => {
      const gbnf = await argsGrammars(llama, picked.tools, all);
      return mode === "forced" ? composeToolCallGrammar(gbnf, { parallel }) : composeToolCallBodyGrammar(gbnf, { parallel });
    },
  };
}

/** Each tool's arguments grammar; a schema that cannot compile is a 400 naming that tool's parameters. */
async function argsGrammars(llama: Llama, tools: readonly GrammarTool[], all: readonly GrammarTool[]) {
  const out = [];
  for (const tool of tools) {
    try {
      out.push(...(await toolArgsGbnf(llama, [tool])));
    } catch (err) {
      if (!(err instanceof SchemaError)) throw err;
      const param = `tools[${all.indexOf(tool)}].function.parameters`;
      throw new ApiError("invalid_value", `${param}: cannot be compiled into a grammar: ${err.message}`, { param });
    }
  }
  return out;
}

export interface ToolModel {
  model: LlamaModel;
  vocabularySize: number;
  /** Markup tokens that never belong inside a call's arguments (special-tokens.ts). */
  argumentBan: readonly Token[];
}

/**
 * Tool calling's hold on sampling: a forced turn's grammar from the first token, or for "auto" a trigger that
 * switches to the call grammar once the model writes `<tool_call>`; markup banned inside arguments, and
 * `<tool_call>` itself under "none". Returns the trigger to feed each decoded piece, when there is one.
 */
export async function toolSampling(
  { model, vocabularySize, argumentBan }: ToolModel,
  request: GenerateRequest,
  options: SequenceEvaluateOptions,
  stream: AnswerStream,
  grammarFor: (key: string, build: (llama: Llama) => Promise<string>) => Promise<LlamaGrammar>,
): Promise<((piece: string, answer: AnswerStream) => void) | undefined> {
  const mode = toolMode(request);
  if (mode === "off") return undefined;
  const sampler = { tokenizer: model.tokenizer, vocabularySize };
  if (mode === "none") {
    const token = singleToken(model, TOOL_CALL_OPEN);
    options.tokenBias = tokenBias(request.logit_bias, sampler, token === undefined ? [] : [token]);
    return undefined;
  }
  const outside = tokenBias(request.logit_bias, sampler);
  const inside = tokenBias(request.logit_bias, sampler, argumentBan);
  options.tokenBias = () => (stream.insideCall ? inside : outside);
  const plan = toolGrammarPlan(request)!;
  const grammar = await grammarFor(plan.key, plan.build);
  if (plan.when === "forced") {
    options.grammarEvaluationState = new LlamaGrammarEvaluationState({ model, grammar }); // single-use: one per generation
    return undefined;
  }
  let state: LlamaGrammarEvaluationState | undefined;
  let tail = "";
  options.grammarEvaluationState = () => state;
  return (piece, answer) => {
    if (state !== undefined || answer.inReasoning) return;
    tail = (tail + piece).slice(-TOOL_CALL_OPEN.length);
    if (tail === TOOL_CALL_OPEN) state = new LlamaGrammarEvaluationState({ model, grammar });
  };
}
