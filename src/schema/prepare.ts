// Prepares an OpenAI `response_format` / tool `parameters` JSON Schema for node-llama-cpp's grammar generator
// (`llama.createGrammarForJsonSchema`): one walk both rewrites it into the subset the generator handles correctly and
// says, per keyword and path, whether the grammar enforces it, it is an annotation, it needed a rewrite, or it cannot be enforced.
import type { GbnfJsonSchema } from "node-llama-cpp";
import { ANNOTATIONS, anyJson, COMBINATORS, constraining, FAMILY, isObj, mergeAll, TYPES, UNSUPPORTED, type At, type KeywordKind, type Obj } from "./keywords.ts";
import { array, object, type ContainerWalk } from "./prepare-containers.ts";
import { literal, numeric, NUMERIC, string } from "./prepare-scalars.ts";
import { pointer } from "./json-pointer.ts";
import { checkSchemaBounds, SchemaBudget, SchemaError } from "./bounds.ts";
import { grammarWork, type GrammarWork, type PreparedRule } from "./grammar-work.ts";
import { resolveLocalRef } from "./validate.ts";

export type { KeywordKind };

export interface KeywordUse {
  keyword: string;
  /** JSON pointer to the keyword in the schema, e.g. "/properties/city/pattern" (a missing `type`: where it would be). */
  path: string;
  kind: KeywordKind;
  note?: string;
}

/** A schema the walk cannot make sense of (not an object, a `$ref` to nowhere, an unknown type, past a bound): a 400 either way. */
export { SchemaError };

export interface PreparedSchema {
  /** What to hand to `createGrammarForJsonSchema`. */
  schema: GbnfJsonSchema;
  /** Every keyword the input uses, in walk order. */
  uses: KeywordUse[];
  /**
   * svc's own GBNF rules (formats, numeric bounds), each standing in `schema` as `{ const: name }`: the generator
   * writes that as the literal "\"name\"", which agent/engine/grammar/json-grammar.ts replaces with the rule. Names
   * are letters and digits, absent from the caller's schema.
   */
  rules: PreparedRule[];
  /** What its grammar will cost llama.cpp, already charged to the budget (src/schema/grammar-work.ts). */
  work: GrammarWork;
}

/**
 * The schema prepared within `budget` (one per request), its grammar's work counted: a SchemaError past a limit or once
 * the budget is spent.
 */
export function prepareSchema(schema: unknown, budget = new SchemaBudget()): PreparedSchema {
  checkSchemaBounds(schema, budget);
  const preparer = new Preparer(schema, budget);
  const prepared = preparer.run();
  return { ...prepared, work: grammarWork(prepared.schema, prepared.rules, budget, (node) => preparer.paths.get(node)) };
}
/**
 * The schema rewritten into what the library handles correctly (see `classifyKeywords` for what is lost). Optional
 * properties are always generated (the library cannot leave one out); that output is still valid for the schema.
 */
export const normalize = (schema: unknown): GbnfJsonSchema => prepareSchema(schema).schema;
export const classifyKeywords = (schema: unknown): KeywordUse[] => prepareSchema(schema).uses;
/** OpenAI strict mode: the first keyword the grammar cannot enforce, to refuse the request with a 400. */
export const strictRefusal = (schema: unknown): KeywordUse | undefined => classifyKeywords(schema).find((u) => u.kind === "unsupported");

class Preparer implements ContainerWalk {
  private readonly uses: KeywordUse[] = [];
  private readonly rules = new Map<string, PreparedRule>();
  private ruleBase?: string;
  private readonly seen = new Set<string>();
  /** Referenced subschemas by JSON pointer: each becomes one root `$defs` entry. */
  private readonly defs = new Map<string, { name: string; schema?: Obj }>();
  /** Where each prepared node came from in the caller's schema, for the grammar's count to name. */
  readonly paths = new WeakMap<object, string>();

  constructor(
    readonly root: unknown,
    readonly budget: SchemaBudget,
  ) {}

  run(): Omit<PreparedSchema, "work"> {
    let schema = this.node(this.root, "");
    if (this.defs.size > 0) {
      const $defs = Object.fromEntries([...this.defs.values()].map((d) => [d.name, d.schema!]));
      // the generator reads $defs on $ref, oneOf, object and array schemas only
      schema = "$ref" in schema || "oneOf" in schema || schema.type === "object" || schema.type === "array"
        ? { ...schema, $defs } : { oneOf: [schema], $defs };
    }
    return { schema: schema as GbnfJsonSchema, uses: this.uses, rules: [...this.rules.values()] };
  }

  rule(gbnf: string | ((name: string) => string), path: string, key = gbnf as string, width?: number): Obj {
    let found = this.rules.get(key);
    if (found === undefined) {
      if (this.ruleBase === undefined) {
        const text = JSON.stringify(this.root);
        this.ruleBase = "svcgbnf";
        while (text.includes(this.ruleBase)) this.ruleBase += "x";
      }
      const name = `${this.ruleBase}${this.rules.size}`;
      const text = typeof gbnf === "string" ? gbnf : gbnf(name);
      // a format's or a range's alternatives are the most of it alive at once
      found = { name, gbnf: text, width: width ?? 1 + (text.match(/\|/g)?.length ?? 0) };
      // building, writing and parsing the grammar measured about 0.4 µs a byte of rule: a step per 4 bytes
      this.budget.step(path, Math.ceil(text.length / 4));
      this.rules.set(key, found);
    }
    return { const: found.name };
  }

  use(keyword: string, path: string, kind: KeywordKind, note?: string): void {
    this.budget.step(path);
    const key = `${kind}\0${keyword}\0${path}\0${note}`;
    if (this.seen.has(key)) return; // merged branches walk their shared keywords more than once
    this.seen.add(key);
    this.uses.push(note === undefined ? { keyword, path, kind } : { keyword, path, kind, note });
  }

  node(raw: unknown, path: string, at: At = (k) => pointer(path, k)): Obj {
    const out = this.walk(raw, path, at);
    if (!this.paths.has(out)) this.paths.set(out, path);
    return out;
  }

  private walk(raw: unknown, path: string, at: At): Obj {
    this.budget.step(path, 2); // measured: a node's walk costs about two validation steps, beside its keywords
    if (raw === true) return this.use("true", path, "rewritten", "boolean schema: any JSON"), anyJson();
    if (raw === false) return this.use("false", path, "unsupported", "boolean schema that nothing matches"), anyJson();
    if (!isObj(raw)) throw new SchemaError(path, "a schema must be an object or a boolean");
    for (const k of Object.keys(raw)) {
      if (ANNOTATIONS.has(k)) this.use(k, at(k), "annotation");
      else if (k === "$defs" || k === "definitions") this.walkDefs(raw[k], at(k), k);
    }
    if (typeof raw.$ref === "string") return this.ref(raw, at);
    if (Object.keys(raw).some((k) => COMBINATORS.has(k))) {
      const out = this.combinator(raw, path, at);
      if (out) return out;
    }
    return this.typed(raw, path, at);
  }

  /** Definitions are walked where they stand, so keywords in unreferenced ones are listed too. */
  private walkDefs(defs: unknown, path: string, keyword: string): void {
    if (!isObj(defs)) throw new SchemaError(path, `${keyword} must be an object`);
    this.use(keyword, path, keyword === "$defs" ? "enforced" : "rewritten", keyword === "$defs" ? undefined : "emitted as $defs");
    for (const [name, def] of Object.entries(defs)) this.node(def, pointer(path, name));
  }

  private ref(raw: Obj, at: At): Obj {
    const ref = raw.$ref as string;
    this.budget.expandRef(at("$ref"));
    for (const k of constraining(raw)) if (k !== "$ref") this.use(k, at(k), "unsupported", "beside $ref: the grammar follows the $ref only");
    const target = resolveLocalRef(this.root, ref);
    if (!ref.startsWith("#") || (ref.length > 1 && !ref.startsWith("#/"))) {
      this.use("$ref", at("$ref"), "unsupported", "only local JSON-pointer references (#/…) are supported");
      return anyJson();
    }
    if (target === undefined) throw new SchemaError(at("$ref"), `$ref ${ref} points to nothing in this schema`);
    const key = decodeURIComponent(ref.slice(1));
    const direct = /^\/\$defs\/[^/]+$/.test(key);
    this.use("$ref", at("$ref"), direct ? "enforced" : "rewritten", direct ? undefined : "points outside $defs: emitted as a $defs entry");
    let def = this.defs.get(key);
    if (!def) {
      def = { name: `d${this.defs.size}` };
      this.defs.set(key, def); // before the walk, so a recursive reference finds it
      def.schema = this.node(target, key);
    }
    return { $ref: `#/$defs/${def.name}` };
  }

  /** oneOf / anyOf (a plain alternation in the grammar) and allOf (merged when its branches do not overlap). */
  private combinator(raw: Obj, path: string, at: At): Obj | undefined {
    const branches = (k: string) => {
      const list = raw[k];
      if (!Array.isArray(list) || list.length === 0) throw new SchemaError(at(k), `${k} must be a non-empty array`);
      return list.map((schema, i) => ({ schema, path: pointer(at(k), i) }));
    };
    let alternatives: { schema: unknown; path: string }[] | undefined;
    if ("oneOf" in raw) {
      this.use("oneOf", at("oneOf"), "enforced", "as anyOf: a value matching several branches is not refused");
      alternatives = branches("oneOf");
    }
    if ("anyOf" in raw) {
      if (alternatives) this.use("anyOf", at("anyOf"), "unsupported", "beside oneOf");
      else this.use("anyOf", at("anyOf"), "rewritten", "to oneOf"), (alternatives = branches("anyOf"));
    }
    const rest = Object.fromEntries(Object.entries(raw).filter(([k]) => !COMBINATORS.has(k)));
    if ("allOf" in raw) {
      const all = branches("allOf");
      if (alternatives) this.use("allOf", at("allOf"), "unsupported", "beside oneOf/anyOf");
      else if (all.length === 1) this.use("allOf", at("allOf"), "rewritten", "single branch"), (alternatives = all);
      else {
        const merged = this.merge([{ schema: rest, path: "" }, ...all], at, path);
        if (!merged) return this.use("allOf", at("allOf"), "unsupported", "branches share keywords"), undefined;
        this.use("allOf", at("allOf"), "rewritten", "branches merged");
        return this.node(merged.schema, path, merged.at);
      }
    }
    if (!alternatives) return undefined;
    const out: Obj[] = [];
    for (const branch of alternatives) {
      // keywords beside the combinator apply to every branch: merged into each, narrowing `type`
      const merged = this.merge([{ schema: rest, path: "" }, branch], at, branch.path);
      if (merged === null) continue; // types that cannot meet: this branch matches nothing
      if (!merged) {
        for (const k of constraining(rest)) this.use(k, at(k), "unsupported", "beside a oneOf/anyOf branch that also sets it");
        out.push(this.node(branch.schema, branch.path));
      } else out.push(this.node(merged.schema, branch.path, merged.at));
    }
    if (out.length === 0) throw new SchemaError(path, "no oneOf/anyOf branch can match");
    return { oneOf: out };
  }

  /** mergeAll, its comparisons paid for: 128 branches beside a large `rest` would otherwise compare it 128 times. */
  private merge(parts: { schema: unknown; path: string }[], at: At, path: string): ReturnType<typeof mergeAll> {
    return mergeAll(parts, at, () => this.budget.step(path));
  }

  private typed(raw: Obj, path: string, at: At): Obj {
    if ("const" in raw || "enum" in raw) {
      const out = literal(this, raw, at);
      if (out) return out;
    }
    let types: string[];
    if (raw.type === undefined) {
      const families = [...new Set(Object.keys(raw).filter((k) => FAMILY[k]).map((k) => FAMILY[k]!))];
      this.use("type", at("type"), "rewritten", families.length > 0 ? `missing: ${families.join(", ")} inferred from its keywords` : "missing: any JSON");
      if (families.length === 0) {
        for (const k of constraining(raw)) if (!COMBINATORS.has(k)) this.use(k, at(k), "annotation", "unknown keyword: ignored, as JSON Schema says");
        return anyJson();
      }
      types = families;
    } else {
      types = Array.isArray(raw.type) ? raw.type : [raw.type];
      if (types.length === 0 || types.some((t) => !TYPES.includes(t as string))) throw new SchemaError(at("type"), `unknown type ${JSON.stringify(raw.type)}`);
    }
    const handled = new Set(["type", "enum", "const", ...COMBINATORS]);
    const parts: Obj[] = [];
    const basic: string[] = []; // plain scalar types, grouped into one { type: [...] }
    for (const t of new Set(types)) {
      if (t === "object") parts.push(object(this, raw, at, handled));
      else if (t === "array") parts.push(array(this, raw, at, handled));
      else if (t === "string" && Object.keys(raw).some((k) => FAMILY[k] === "string" && !UNSUPPORTED.has(k))) parts.push(string(this, raw, at, handled));
      else if ((t === "integer" || t === "number") && NUMERIC.some((k) => k in raw)) parts.push(numeric(this, raw, at, handled, t));
      else basic.push(t);
    }
    if (basic.length > 0) parts.push({ type: basic.length === 1 ? basic[0] : basic });
    if (raw.type !== undefined) this.use("type", at("type"), parts.length > 1 ? "rewritten" : "enforced", parts.length > 1 ? "to oneOf, one schema per type" : undefined);
    for (const k of constraining(raw)) {
      if (handled.has(k)) continue;
      if (UNSUPPORTED.has(k)) this.use(k, at(k), "unsupported");
      else if (FAMILY[k]) this.use(k, at(k), "annotation", `applies to ${FAMILY[k]} values only, which the type excludes`);
      else this.use(k, at(k), "annotation", "unknown keyword: ignored, as JSON Schema says");
    }
    return parts.length === 1 ? parts[0]! : { oneOf: parts };
  }
}
