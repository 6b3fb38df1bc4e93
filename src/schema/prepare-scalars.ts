// The scalar side of the schema walk (src/schema/prepare.ts): const/enum filtered by the other keywords, strings with
// a length or a format, and numbers with bounds. Formats and bounds are grammar rules of svc's own (src/schema/formats.ts,
// src/schema/numeric-range.ts), which the prepared schema holds as a placeholder `const` (see PreparedSchema.rules).
import { constraining, COMBINATORS, type At, type KeywordKind, type Obj } from "./keywords.ts";
import { SchemaError, type SchemaBudget } from "./bounds.ts";
import { FORMAT_LENGTHS, formatGbnf, GRAMMAR_FORMATS } from "./formats.ts";
import { patternGbnf } from "./pattern-grammar.ts";
import { boundsOf, integerGbnf, integerRange, numberGbnf, SAFE } from "./numeric-range.ts";
import { deepEqual, validate } from "./validate.ts";
import { zodFormatPattern } from "./zod-patterns.ts";

/** What the scalar walks need of the Preparer. */
export interface ScalarWalk {
  root: unknown;
  budget: SchemaBudget;
  use(keyword: string, path: string, kind: KeywordKind, note?: string): void;
  /**
   * The placeholder for one of svc's own GBNF rules (built once per `key`; a function gets the rule's name); `width`:
   * how many of its rules llama.cpp may hold alive at once, if it knows better than its alternatives' count.
   */
  rule(gbnf: string | ((name: string) => string), path: string, key?: string, width?: number): Obj;
}

export const NUMERIC = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"];
/** The formats JSON Schema 2020-12 defines; any other `format` is an annotation by the specification. */
const JSON_SCHEMA_FORMATS = new Set(["date-time", "date", "time", "duration", "email", "idn-email", "hostname", "idn-hostname", "ipv4", "ipv6",
  "uri", "uri-reference", "iri", "iri-reference", "uuid", "uri-template", "json-pointer", "relative-json-pointer", "regex"]);
const isScalar = (v: unknown) => v === null || ["string", "number", "boolean"].includes(typeof v);

/** const / enum: the grammar emits only the listed scalars, so members the other keywords refuse are filtered out. */
export function literal(walk: ScalarWalk, raw: Obj, at: At): Obj | undefined {
  const rest = Object.fromEntries(Object.entries(raw).filter(([k]) => k !== "const" && k !== "enum"));
  // validate's paths point into the value: what it runs out of is blamed on the keyword being filtered
  const fits = (k: string) => (v: unknown) => {
    try {
      return validate(v, rest, walk.root, walk.budget).length === 0;
    } catch (err) {
      throw err instanceof SchemaError ? new SchemaError(at(k), err.detail, err.code) : err;
    }
  };
  let out: Obj | undefined;
  if ("const" in raw) {
    if (!isScalar(raw.const)) walk.use("const", at("const"), "unsupported", "object and array values are not supported");
    else if (!fits("const")(raw.const)) throw new SchemaError(at("const"), "the const value breaks the schema's other keywords");
    else walk.use("const", at("const"), "enforced"), (out = { const: raw.const });
  }
  if ("enum" in raw) {
    if (!Array.isArray(raw.enum)) throw new SchemaError(at("enum"), "enum must be an array");
    const scalars = raw.enum.filter(isScalar);
    const kept = scalars.filter(fits("enum")).filter((v) => !out || deepEqual(v, out.const, () => walk.budget.step(at("enum"))));
    if (scalars.length === 0) walk.use("enum", at("enum"), "unsupported", "object and array members are not supported");
    else if (kept.length === 0) throw new SchemaError(at("enum"), "no enum member satisfies the schema");
    else {
      const dropped = raw.enum.length - kept.length;
      walk.use("enum", at("enum"), dropped > 0 ? "rewritten" : "enforced", dropped > 0 ? `${dropped} member(s) the schema cannot produce dropped` : undefined);
      out = { enum: kept };
    }
  }
  if (!out) return undefined;
  for (const k of constraining(rest)) if (!COMBINATORS.has(k)) walk.use(k, at(k), "enforced", "by filtering the const/enum values");
  return out;
}

export function string(walk: ScalarWalk, raw: Obj, at: At, handled: Set<string>): Obj {
  for (const k of ["minLength", "maxLength", "format", "pattern"]) handled.add(k);
  const format = raw.format;
  if (typeof format === "string" && GRAMMAR_FORMATS.has(format)) {
    walk.use("format", at("format"), "enforced", "a subset of the format (see docs/api.md)");
    if (zodFormatPattern(format, raw.pattern)) {
      walk.use("pattern", at("pattern"), "enforced", "zod's pattern for this format: the format's grammar generates only strings it matches");
    } else if ("pattern" in raw) walk.use("pattern", at("pattern"), "unsupported", "beside format: the grammar follows the format only");
    // a length beside the format holds when every string the format's grammar writes is within it
    const [shortest, longest] = FORMAT_LENGTHS[format]!;
    for (const k of ["minLength", "maxLength"]) {
      if (!(k in raw)) continue;
      const holds = k === "minLength" ? (raw[k] as number) <= shortest : (raw[k] as number) >= longest;
      if (holds) walk.use(k, at(k), "enforced", `the format's strings are ${shortest} to ${longest} characters long`);
      else walk.use(k, at(k), "unsupported", `beside format: its strings are ${shortest} to ${longest} characters long`);
    }
    return walk.rule(formatGbnf(format), at("format"));
  }
  const unknown = typeof format === "string" && !JSON_SCHEMA_FORMATS.has(format);
  const refuseFormat = () => walk.use("format", at("format"), "unsupported", `only ${[...GRAMMAR_FORMATS].join(", ")} are generated`);
  if (format !== undefined && !(unknown && typeof raw.pattern === "string")) refuseFormat();
  if (typeof raw.pattern === "string") {
    const converted = patternGbnf(walk.budget.pattern(raw.pattern, at("pattern")));
    walk.budget.step(at("pattern"), Math.ceil(converted.visits / 16));
    if (unknown && !converted.ok) refuseFormat();
    if (converted.ok) {
      walk.use("pattern", at("pattern"), "enforced", "strings matching from their first character to their last");
      // zod writes its own formats (starts_with, nanoid, cuid, …) with the pattern that is its check
      if (unknown) walk.use("format", at("format"), "annotation", "not a JSON Schema format: ignored, as JSON Schema says; the pattern beside it is enforced");
      for (const k of ["minLength", "maxLength"]) if (k in raw) walk.use(k, at(k), "unsupported", "beside pattern");
      return walk.rule(converted.gbnf, at("pattern"), `pattern\0${raw.pattern}`, converted.width);
    }
    walk.use("pattern", at("pattern"), "unsupported", converted.why);
  }
  const out: Obj = { type: "string" };
  for (const k of ["minLength", "maxLength"]) {
    if (typeof raw[k] === "number") (out[k] = raw[k]), walk.use(k, at(k), "enforced", "in characters; a \\u escape counts as one, and so does each byte of invalid UTF-8 a model emits");
  }
  return out;
}

/** An integer or number with bounds: exactly the integers in range, or a subset of the numbers in range. */
export function numeric(walk: ScalarWalk, raw: Obj, at: At, handled: Set<string>, type: "integer" | "number"): Obj {
  const keys = NUMERIC.filter((k) => k in raw);
  for (const k of keys) {
    handled.add(k);
    const draft4 = typeof raw[k] === "boolean" && k.startsWith("exclusive");
    if (!draft4 && (typeof raw[k] !== "number" || !Number.isFinite(raw[k]))) throw new SchemaError(at(k), `${k} must be a number`);
  }
  const bounds = boundsOf(raw);
  if (type === "integer") {
    const [lo, hi] = integerRange(bounds);
    if (lo > hi) throw new SchemaError(at(keys[0]!), "no integer lies within these bounds");
    for (const k of keys) {
      const wide = typeof raw[k] === "number" && Math.abs(raw[k] as number) >= SAFE;
      walk.use(k, at(k), "enforced", wide ? "at or beyond the safe-integer range: the integer type's own range, ±(2^53 − 1)" : undefined);
    }
    return walk.rule(integerGbnf(lo, hi), at(keys[0]!));
  }
  const gbnf = numberGbnf(bounds);
  if (gbnf === undefined) {
    for (const k of keys) walk.use(k, at(k), "unsupported", "a range that holds no integer and no k.ddd with its whole part k in it");
    return { type: "number" };
  }
  for (const k of keys) walk.use(k, at(k), "enforced", "numbers in range, without an exponent, at most 15 fraction digits");
  return walk.rule(gbnf, at(keys[0]!));
}
