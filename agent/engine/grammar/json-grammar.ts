// The GBNF text for a JSON schema: node-llama-cpp's generator run on the prepared schema, with its number rules
// tightened, because they allow 16-digit exponents ("3e414150" parses to Infinity, and "5e-3" is no integer), and
// svc's own rules (formats, numeric bounds) put where their placeholders stand.
import type { Llama } from "node-llama-cpp";
import { prepareSchema, type PreparedSchema } from "../../../src/schema/prepare.ts";
import { SchemaBudget } from "../../../src/schema/bounds.ts";

/** The JSON-schema grammar ends with these newlines (then any more): stop on them and trim them. */
export const JSON_GRAMMAR_END = "\n\n\n\n";

const EXPONENT = ' ([eE] [-+]? ("0" | [1-9] [0-9]{0,15}))?';
// a 16-digit mantissa times 10^±99 stays finite
const SMALL_EXPONENT = " ([eE] [-+]? [0-9]{1,2})?";
const TERMINATOR = / "\\n\\n\\n\\n" \[\\n\]\*\s*$/;

function replaceIn(line: string, from: string, to: string): string {
  if (!line.includes(from)) throw new Error(`unexpected node-llama-cpp number rule: ${line}`);
  return line.replace(from, to);
}

/** Integers without an exponent, other numbers with at most a two-digit one. */
export function tightenNumberRules(gbnf: string): string {
  return gbnf
    .split("\n")
    .map((line) => {
      if (line.startsWith("integer-number-rule ::=")) return replaceIn(line, EXPONENT, "");
      if (line.startsWith("fractional-number-rule ::=")) return replaceIn(line, EXPONENT, SMALL_EXPONENT);
      return line;
    })
    .join("\n");
}

/** Each placeholder literal (`"\"name\""` in GBNF) replaced by the rule it stands for, and the rules appended. */
export function withRules(gbnf: string, rules: PreparedSchema["rules"]): string {
  let text = gbnf;
  for (const { name } of rules) {
    const placeholder = `"\\"${name}\\""`;
    if (!text.includes(placeholder)) throw new Error(`node-llama-cpp's grammar lost the placeholder of rule ${name}`);
    text = text.replaceAll(placeholder, name);
  }
  return [text, ...rules.map(({ name, gbnf: body }) => `${name} ::= ${body}`)].join("\n");
}

/** The root rule without the trailing-newline terminator, for embedding the value in a larger grammar. */
export function withoutTerminator(gbnf: string): string {
  const lines = gbnf.split("\n");
  const root = lines.findIndex((l) => l.startsWith("root ::="));
  if (root < 0 || !TERMINATOR.test(lines[root]!)) throw new Error("unexpected node-llama-cpp JSON-schema grammar: no terminator on its root rule");
  lines[root] = lines[root]!.replace(TERMINATOR, "");
  return lines.join("\n");
}

/**
 * GBNF for values of `schema` (normalised first, its grammar's work charged to `budget`, the turn's: a SchemaError for an
 * unreadable one or one past the budget), for `llama.createGrammar({ grammar })`. With `terminator`, the text ends like
 * the library's own: `JSON_GRAMMAR_END`.
 */
export async function jsonSchemaGbnf(llama: Llama, schema: unknown, { terminator = true, budget = new SchemaBudget() } = {}): Promise<string> {
  const prepared = prepareSchema(schema, budget);
  const grammar = await llama.createGrammarForJsonSchema(prepared.schema as never);
  const text = withRules(tightenNumberRules(grammar.grammar), prepared.rules);
  return terminator ? text : withoutTerminator(text);
}
