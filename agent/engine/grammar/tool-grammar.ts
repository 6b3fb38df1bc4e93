// GBNF grammars that force Qwen3's tool-call format, `<tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>`,
// with ARGS following that tool's parameters schema, built from node-llama-cpp's per-schema grammar text.
import type { Llama } from "node-llama-cpp";
import { jsonSchemaGbnf } from "./json-grammar.ts";
import { SchemaBudget } from "../../../src/schema/bounds.ts";

import { TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from "../qwen3-markup.ts";

/** An OpenAI function tool, as far as the grammar cares. */
export interface GrammarTool {
  name: string;
  /** JSON Schema of the arguments; absent means no arguments (`{}`), as OpenAI says. */
  parameters?: unknown;
}

/** A tool with its arguments' GBNF: the JSON-schema grammar without its trailing-newline terminator. */
export interface ToolArgsGbnf {
  name: string;
  gbnf: string;
}

export interface ToolCallGrammarOptions {
  /** More than one call, separated by "\n" (OpenAI `parallel_tool_calls`, default true). */
  parallel?: boolean;
  /** Let the model write a `<think>\n…</think>\n\n` block before the first call (reasoning on). */
  allowThink?: boolean;
}

const NO_ARGUMENTS = { type: "object", properties: {} };
const RULE_NAME = /[a-zA-Z0-9-]/;

/** A GBNF string literal matching exactly `text`. */
export const gbnfLiteral = (text: string): string => JSON.stringify(text);

/** Renames every rule defined in `gbnf` to `prefix + name`, leaving "literals" and [classes] untouched. */
export function prefixRules(gbnf: string, prefix: string): string {
  const names = new Set([...gbnf.matchAll(/^([a-zA-Z0-9-]+)\s*::=/gm)].map((m) => m[1]!));
  let out = "";
  for (let i = 0; i < gbnf.length; ) {
    const ch = gbnf[i]!;
    if (ch === '"' || ch === "[") {
      const close = ch === '"' ? '"' : "]";
      let j = i + 1;
      while (j < gbnf.length && gbnf[j] !== close) j += gbnf[j] === "\\" ? 2 : 1;
      out += gbnf.slice(i, j + 1);
      i = j + 1;
    } else if (RULE_NAME.test(ch)) {
      let j = i;
      while (j < gbnf.length && RULE_NAME.test(gbnf[j]!)) j++;
      const word = gbnf.slice(i, j);
      out += names.has(word) ? prefix + word : word;
      i = j;
    } else {
      out += ch;
      i++;
    }
  }
  return out;
}

/** One alternative per tool: the call's JSON up to and including the arguments, then the tool's renamed rules. */
function alternatives(tools: readonly ToolArgsGbnf[]): { call: string; rules: string[] } {
  if (tools.length === 0) throw new Error("a tool-call grammar needs at least one tool");
  const alts = tools.map((tool, i) => `${gbnfLiteral(`{"name": "${jsonStringBody(tool.name)}", "arguments": `)} t${i}-root`);
  return { call: `( ${alts.join(" | ")} ) ${gbnfLiteral("}\n" + TOOL_CALL_CLOSE)}`, rules: tools.map((t, i) => prefixRules(t.gbnf, `t${i}-`)) };
}

/** The characters of a JSON string literal for `text`, without its quotes: the name as the model writes it. */
const jsonStringBody = (text: string) => JSON.stringify(text).slice(1, -1);

/**
 * A whole forced turn (tool_choice "required", or a named function with one tool): one or more calls, or exactly
 * one when not `parallel`, optionally after a think block. Nothing may follow, so the model ends the turn.
 */
export function composeToolCallGrammar(tools: readonly ToolArgsGbnf[], { parallel = true, allowThink = false }: ToolCallGrammarOptions = {}): string {
  const { call, rules } = alternatives(tools);
  const think = allowThink ? "think? " : "";
  return [
    `root ::= ${think}call${parallel ? ` ( "\\n" call )*` : ""}`,
    `call ::= ${gbnfLiteral(TOOL_CALL_OPEN + "\n")} ${call}`,
    // a think block may hold "<" but not "</", so it cannot swallow its own closing tag
    ...(allowThink ? [`think ::= ${gbnfLiteral("<think>\n")} ( [^<] | "<" [^/] )* ${gbnfLiteral("</think>\n\n")}`] : []),
    ...rules,
  ].join("\n");
}

/**
 * tool_choice "auto": the grammar for what follows once the model itself has written `<tool_call>` (switch the
 * evaluation state to it then): the rest of that call, and more calls when `parallel`.
 */
export function composeToolCallBodyGrammar(tools: readonly ToolArgsGbnf[], { parallel = true }: Pick<ToolCallGrammarOptions, "parallel"> = {}): string {
  const { call, rules } = alternatives(tools);
  const more = parallel ? ` ( ${gbnfLiteral(`\n${TOOL_CALL_OPEN}\n`)} body )*` : "";
  return [`root ::= "\\n" body${more}`, `body ::= ${call}`, ...rules].join("\n");
}

/**
 * Each tool's arguments grammar from its (normalised) parameters schema, all drawing on one `budget` (the composed
 * grammar is built as one); a SchemaError names a bad one's path.
 */
export async function toolArgsGbnf(llama: Llama, tools: readonly GrammarTool[], budget = new SchemaBudget()): Promise<ToolArgsGbnf[]> {
  const out: ToolArgsGbnf[] = [];
  for (const tool of tools) out.push({ name: tool.name, gbnf: await jsonSchemaGbnf(llama, tool.parameters ?? NO_ARGUMENTS, { terminator: false, budget }) });
  return out;
}

/** Picks the tools a forced turn may call: all of them ("required") or the named one (exactly one call). */
export function forcedTools<T extends GrammarTool>(tools: readonly T[], choice: "required" | { name: string }): { tools: T[]; parallel?: false } {
  if (choice === "required") return { tools: [...tools] };
  const tool = tools.find((t) => t.name === choice.name);
  if (!tool) throw new Error(`tool_choice names ${JSON.stringify(choice.name)}, which is not among the tools`);
  return { tools: [tool], parallel: false };
}
