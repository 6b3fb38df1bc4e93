// Bounds on the work a caller's JSON Schema can cost (DESIGN §8), the same at the gateway and on the agent: static
// limits checked in one pass before any walk (size, nesting, enum size, branches, patterns), and a step budget that
// every later walk (the grammar preparation, the const/enum filter, $ref expansions, pattern matches) draws on.
import type { RE2JS } from "re2js";
import { pointer } from "./json-pointer.ts";
import { zodFormatPattern } from "./zod-patterns.ts";
import { compilePattern, MAX_PATTERN_LENGTH, MAX_PATTERN_PROGRAM, programSize, type PatternResult } from "./pattern.ts";

/** Each limit by the name a refusal gives it (docs/api.md lists them). */
export const SCHEMA_LIMITS = {
  /** The schema as JSON text, in UTF-16 code units. */
  schema_bytes: 64 * 1024,
  /** JSON values in the schema (objects, arrays and scalars, annotations included). */
  schema_nodes: 10_000,
  /** Nesting of objects and arrays. */
  schema_depth: 64,
  /** Subschemas in one allOf / anyOf / oneOf. */
  combinator_branches: 128,
  /** Members of one enum. */
  enum_members: 1_000,
  /** One const value or enum member, as JSON text. */
  literal_bytes: 4 * 1024,
  /** One pattern or patternProperties key. */
  pattern_length: MAX_PATTERN_LENGTH,
  /** Instructions of one pattern's RE2 program (what each input character may cost to match). */
  pattern_program: MAX_PATTERN_PROGRAM,
  /** $ref expansions over all the work on one request's schemas. */
  ref_expansions: 1_000,
  /**
   * Parse stacks llama.cpp may keep alive at once in one schema's grammar (src/schema/grammar-work.ts): each token
   * sampled is checked against every one, about 0.1 ms each with a 150,000-token vocabulary. Past it the request is
   * schema_too_complex. A 1,000-member enum of strings alike in their first character is the most an honest schema needs.
   */
  grammar_stacks: 1_000,
  /**
   * Steps of all the work on the schemas of one request. Steps measured 1 to 3 µs of CPU each on a loaded 2-core
   * machine (a node prepared, a validation pass per enum member, a $ref followed, a pattern match), so this is
   * about 50 ms; the heaviest ordinary request measured (600 properties each an anyOf of three) takes 14,000.
   */
  schema_steps: 30_000,
} as const;
export type SchemaLimit = keyof typeof SCHEMA_LIMITS;

/** A schema svc will not serve: unreadable, past a limit (invalid_value), or past the step budget (schema_too_complex). */
export class SchemaError extends Error {
  constructor(
    /** JSON pointer into the schema. */
    readonly path: string,
    /** What is wrong, without the path. */
    readonly detail: string,
    readonly code: "invalid_value" | "schema_too_complex" = "invalid_value",
  ) {
    super(`${path || "/"}: ${detail}`);
  }
}

const overLimit = (path: string, what: string, limit: SchemaLimit) =>
  new SchemaError(path, `${what}; at most ${SCHEMA_LIMITS[limit]} are allowed (schema limit ${limit})`);


/** The work left for one request's schemas; each walk takes steps from it and throws once it is spent. */
export class SchemaBudget {
  private steps = 0;
  private refs = 0;
  private readonly patterns = new Map<string, PatternResult>();

  constructor(private readonly maxSteps: number = SCHEMA_LIMITS.schema_steps) {}

  /** Spends `n` steps at `path`. */
  step(path: string, n = 1): void {
    this.steps += n;
    if (this.steps > this.maxSteps) {
      throw new SchemaError(path, `the schema needs more work than svc spends on one request (${this.maxSteps} steps); simplify it`, "schema_too_complex");
    }
  }

  /** One $ref followed at `path`. */
  expandRef(path: string): void {
    if (++this.refs > SCHEMA_LIMITS.ref_expansions) throw overLimit(path, `more than ${SCHEMA_LIMITS.ref_expansions} $ref expansions`, "ref_expansions");
    this.step(path, 2); // resolving the pointer costs about two steps
  }

  /** The pattern compiled once per request for RE2, or why it cannot be. */
  compiled(source: string, path: string): PatternResult {
    let found = this.patterns.get(source);
    if (found === undefined) {
      this.step(path, Math.ceil(source.length / 4) + 1);
      found = compilePattern(source);
      this.patterns.set(source, found);
      // compiling measured about 5 µs an instruction
      if (found.ok) this.step(path, 3 * programSize(found.re));
    }
    return found;
  }

  /** The compiled pattern, or the SchemaError at `path` naming why RE2 cannot take it. */
  pattern(source: string, path: string): RE2JS {
    const found = this.compiled(source, path);
    if (!found.ok) throw new SchemaError(path, `the pattern ${JSON.stringify(source.slice(0, 80))} ${found.why}`);
    return found.re;
  }

  /**
   * Whether `input` matches `re` anywhere (JSON Schema's `pattern` is unanchored), in time linear in the input and
   * the program: at worst about 18 ns per character and instruction (`(\p{L}|\p{N}){1000}`), 1/64 of a step.
   */
  test(re: RE2JS, input: string, path: string): boolean {
    this.step(path, 4 + Math.ceil((input.length * programSize(re)) / 64)); // a match costs about 5 µs before its input
    return re.test(input);
  }
}

/** Keywords whose value is one subschema, a list of them, or a map of them: where the static pass looks for more. */
const ONE = new Set(["items", "additionalItems", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
  "unevaluatedItems", "unevaluatedProperties", "contentSchema"]);
const LIST = new Set(["allOf", "anyOf", "oneOf", "prefixItems", "items"]);
const MAP = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);
const COMBINATOR = new Set(["allOf", "anyOf", "oneOf"]);

/**
 * The static limits, in one pass without recursion (so no nesting can run it out of stack), before any walk that
 * follows `$ref`s or filters values. Every pattern is compiled here, so one RE2 refuses is named at once.
 */
export function checkSchemaBounds(schema: unknown, budget: SchemaBudget): void {
  let nodes = 0;
  // "schema": a schema; "each": an allOf list, a properties map, …, whose entries are schemas; "data": neither
  const stack: { value: unknown; path: string; level: number; role: "schema" | "each" | "data" }[] = [{ value: schema, path: "", level: 0, role: "schema" }];
  while (stack.length > 0) {
    const { value, path, level, role } = stack.pop()!;
    budget.step(path);
    if (++nodes > SCHEMA_LIMITS.schema_nodes) throw overLimit("", `the schema holds more than ${SCHEMA_LIMITS.schema_nodes} JSON values`, "schema_nodes");
    if (typeof value !== "object" || value === null) continue;
    if (level >= SCHEMA_LIMITS.schema_depth) throw overLimit(path, `the schema nests more than ${SCHEMA_LIMITS.schema_depth} levels deep`, "schema_depth");
    const keywords = role === "schema" && !Array.isArray(value);
    for (const [key, child] of Object.entries(value)) {
      const at = pointer(path, key);
      if (keywords) checkKeyword(key, child, at, budget, value as Record<string, unknown>);
      const kind = keywords ? subschemaKind(key, child) : undefined;
      stack.push({ value: child, path: at, level: level + 1, role: role === "each" || kind === "one" ? "schema" : kind === "list" || kind === "map" ? "each" : "data" });
    }
  }
  const bytes = JSON.stringify(schema).length; // after the depth check: JSON.stringify recurses
  if (bytes > SCHEMA_LIMITS.schema_bytes) throw overLimit("", `the schema is ${bytes} bytes of JSON`, "schema_bytes");
}

function subschemaKind(key: string, value: unknown): "one" | "list" | "map" | undefined {
  if (LIST.has(key) && Array.isArray(value)) return "list";
  if (ONE.has(key)) return "one";
  if (MAP.has(key)) return "map";
  return undefined;
}

function checkKeyword(key: string, value: unknown, at: string, budget: SchemaBudget, schema: Record<string, unknown>): void {
  if (COMBINATOR.has(key) && Array.isArray(value) && value.length > SCHEMA_LIMITS.combinator_branches) {
    throw overLimit(at, `${key} has ${value.length} branches`, "combinator_branches");
  }
  if (key === "enum" && Array.isArray(value)) {
    if (value.length > SCHEMA_LIMITS.enum_members) throw overLimit(at, `enum has ${value.length} members`, "enum_members");
    value.forEach((member, i) => literalSize(member, pointer(at, i)));
  }
  if (key === "const") literalSize(value, at);
  // zod's own pattern beside its format is matched on RegExp (src/schema/zod-patterns.ts), never compiled for RE2
  if (key === "pattern" && typeof value === "string" && !zodFormatPattern(schema.format, value)) budget.pattern(value, at);
  if (key === "patternProperties" && typeof value === "object" && value !== null) {
    for (const source of Object.keys(value)) budget.pattern(source, pointer(at, source));
  }
}

function literalSize(value: unknown, at: string): void {
  const bytes = JSON.stringify(value)?.length ?? 0;
  if (bytes > SCHEMA_LIMITS.literal_bytes) throw overLimit(at, `this value is ${bytes} bytes of JSON`, "literal_bytes");
}
