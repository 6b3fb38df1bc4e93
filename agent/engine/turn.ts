// What one request asks of a generation, decided once before it runs and handed to the engine whole: whether tools
// may be called (or must be), whether the model thinks first, which prompt form renders the messages, which grammar
// holds the answer, and how the decoded text becomes answer pieces. Pure: the engine applies it to a loaded model.
import type { ChatHistoryItem, ChatModelFunctions, Llama } from "node-llama-cpp";
import { ApiError } from "../../src/errors.ts";
import { SchemaError } from "../../src/schema/prepare.ts";
import { checkSchemaBounds, SchemaBudget } from "../../src/schema/bounds.ts";
import { SCHEMA_PARAM, schemaFault } from "../../src/schema/schema-fault.ts";
import type { ResponseFormat } from "../../src/session/sampling.ts";
import type { SessionPlaintext } from "../../src/session/sealed-request.ts";
import type { AnswerOptions } from "./answer/answer-stream.ts";
import { jsonSchemaGbnf } from "./grammar/json-grammar.ts";
import { composeToolCallBodyGrammar, composeToolCallGrammar, forcedTools, toolArgsGbnf, type GrammarTool } from "./grammar/tool-grammar.ts";
import { toToolHistory, type HistoryMessage } from "./tool-history.ts";

/** The sealed request as a generation reads it: the nonces in it are the receipt's business, not the model's. */
export type GenerateRequest = Omit<SessionPlaintext, "nonce" | "client_nonce">;

/**
 * off: no tools; none: tools offered but not to be called; auto: the model may call; forced: it must
 * ("required", or the named function).
 */
export type ToolMode = "off" | "none" | "auto" | "forced";

export type TurnPrompt =
  /** The model's own chat template over the messages as they are. */
  | { form: "plain" }
  /** Qwen3's tool or no-think rendering: the history as its wrapper reads it, and the tools offered to the model. */
  | { form: "qwen"; history: ChatHistoryItem[]; functions?: ChatModelFunctions };

export interface TurnGrammar {
  /** Cache key: the same schema, or the same tools and options, compile to the same grammar. */
  key: string;
  /** json: the whole answer is one JSON value; forced: tool calls from the first token; lazy: once the model writes `<tool_call>`. */
  when: "json" | "forced" | "lazy";
  /** The field a grammar that fails to compile is blamed on. */
  param: string;
  /** Builds the GBNF text (a 400 naming the tool whose schema cannot compile). */
  build: (llama: Llama) => Promise<string>;
}

export interface Turn {
  /** The request itself: the model, max_tokens and the sampling controls are read from it as they are. */
  request: GenerateRequest;
  mode: ToolMode;
  /** Whether the model thinks before it answers. */
  thinks: boolean;
  prompt: TurnPrompt;
  grammar?: TurnGrammar;
  /** How the decoded text becomes answer pieces: stop sequences, reasoning apart, tool calls. */
  answer: AnswerOptions;
}

/** `json_object`: any JSON object, as a schema the grammar generator reads (`true` lets any value through). */
const ANY_OBJECT = { type: "object", additionalProperties: true };

export interface PlanOptions {
  /**
   * Steps the turn's schemas may cost, grammar work included (src/schema/bounds.ts; default the gateway's
   * schema_steps). All its schemas share them, as at the gateway, since their grammars are built as one.
   */
  schemaSteps?: number;
}

export function planTurn(request: GenerateRequest, { schemaSteps }: PlanOptions = {}): Turn {
  const mode = toolMode(request);
  // a forced call is answered at once, in Qwen3's no-think form, so that even a small model returns its call
  // within max_tokens instead of thinking until the budget runs out
  const thinks = request.enable_thinking !== false && mode !== "forced";
  const calls = mode === "auto" || mode === "forced";
  // the two never meet: a JSON response_format beside tools the model may call is refused (src/session/sealed-request.ts)
  const grammar = request.response_format !== undefined ? jsonGrammar(request.response_format, schemaSteps) : calls ? toolGrammar(request, mode, schemaSteps) : undefined;
  return {
    request,
    mode,
    thinks,
    prompt: turnPrompt(request, mode, thinks),
    ...(grammar ? { grammar } : {}),
    answer: { ...(request.stop ? { stop: request.stop } : {}), parsedReasoning: request.reasoning_format === "parsed", tools: calls },
  };
}

function toolMode(request: GenerateRequest): ToolMode {
  if (request.tools === undefined) return "off";
  const choice = request.tool_choice ?? "auto";
  if (choice === "none") return "none";
  return choice === "auto" ? "auto" : "forced";
}

/** The plain rendering, unless tools, a tool history, kept reasoning or no-think ask for Qwen3's forms. */
function turnPrompt(request: GenerateRequest, mode: ToolMode, thinks: boolean): TurnPrompt {
  const history = request.messages.some((m) => m.role === "tool" || (m.role === "assistant" && (m.tool_calls !== undefined || m.reasoning_content !== undefined)));
  if (mode === "off" && thinks && !history) return { form: "plain" };
  const rendered = toToolHistory(request.messages as readonly HistoryMessage[], request.tools);
  const problem = rendered.problems[0];
  // the gateway checks these first; a provider still refuses to render a history that breaks them
  if (problem) throw new ApiError("invalid_value", `${problem.path}: ${problem.message}.`, { param: problem.path });
  const offered = mode === "none" ? undefined : rendered.functions;
  return { form: "qwen", history: rendered.history, ...(offered ? { functions: offered } : {}) };
}

/**
 * The grammar of a JSON answer; the schema is held to the gateway's bounds (src/schema/bounds.ts) before it is built,
 * and to the work its grammar will cost llama.cpp (src/schema/grammar-work.ts) whatever the gateway let through.
 */
function jsonGrammar(format: ResponseFormat, steps: number | undefined): TurnGrammar {
  const schema = format.type === "json_schema" ? (format.json_schema.schema ?? ANY_OBJECT) : ANY_OBJECT;
  withinBounds(schema, SCHEMA_PARAM);
  return {
    key: `json:${JSON.stringify(schema)}`,
    when: "json",
    param: SCHEMA_PARAM,
    build: (llama) => bounded(() => jsonSchemaGbnf(llama, schema, { budget: new SchemaBudget(steps) }), SCHEMA_PARAM),
  };
}

/** The static bounds, before the schema is even written out as a cache key (so no nesting can overflow the stack). */
function withinBounds(schema: unknown, base: string): void {
  try {
    checkSchemaBounds(schema, new SchemaBudget());
  } catch (err) {
    throw err instanceof SchemaError ? schemaFault(err, base) : err;
  }
}

/** A SchemaError (past a bound, or unreadable) as the same 400 the gateway gives, naming the keyword under `base`. */
async function bounded<T>(build: () => Promise<T>, base: string): Promise<T> {
  try {
    return await build();
  } catch (err) {
    throw err instanceof SchemaError ? schemaFault(err, base) : err;
  }
}

/** The grammar of a turn whose tools may be called: forced from the first token, or lazy behind `<tool_call>`. */
function toolGrammar(request: GenerateRequest, mode: "auto" | "forced", steps: number | undefined): TurnGrammar {
  const all: GrammarTool[] = (request.tools ?? []).map((t) => ({ name: t.function.name, ...(t.function.parameters === undefined ? {} : { parameters: t.function.parameters }) }));
  const choice = request.tool_choice;
  const picked = mode === "forced" ? forcedTools(all, choice === "required" ? "required" : { name: (choice as { function: { name: string } }).function.name }) : { tools: all };
  const parallel = request.parallel_tool_calls !== false && picked.parallel !== false;
  picked.tools.forEach((tool) => withinBounds(tool.parameters ?? {}, `tools[${all.indexOf(tool)}].function.parameters`));
  return {
    key: `tools:${JSON.stringify({ mode, tools: picked.tools, parallel })}`,
    when: mode === "forced" ? "forced" : "lazy",
    param: "tools",
    build: async (llama) => {
      const gbnf = await argsGrammars(llama, picked.tools, all, new SchemaBudget(steps));
      return mode === "forced" ? composeToolCallGrammar(gbnf, { parallel }) : composeToolCallBodyGrammar(gbnf, { parallel });
    },
  };
}

/** Each tool's arguments grammar, all on one budget; a schema that cannot compile is a 400 naming that tool's parameters. */
async function argsGrammars(llama: Llama, tools: readonly GrammarTool[], all: readonly GrammarTool[], budget: SchemaBudget) {
  const out = [];
  for (const tool of tools) out.push(...(await bounded(() => toolArgsGbnf(llama, [tool], budget), `tools[${all.indexOf(tool)}].function.parameters`)));
  return out;
}
