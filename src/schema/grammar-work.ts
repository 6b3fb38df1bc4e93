// The work llama.cpp's grammar will do for a prepared schema (DESIGN §8), counted before any grammar is built, the same
// at the gateway and on the agent. llama.cpp parses with a set of stacks, one per way to read the text so far. Building
// a grammar (llama_grammar_init_impl, on the agent's event loop, once for the grammar and once per session) walks every
// path of leading rule references with no memo (its left-recursion check): a oneOf adds its branches' paths and a $ref
// repeats its definition's, so a chain of oneOfs of $refs doubles at each level. Sampling checks each token against
// every live stack: the branches of a oneOf that begin alike all stay alive, and each nested level multiplies them.
// Counted here: those paths and the rules llama.cpp writes out for each {m,n} repetition, charged to the step budget;
// and the stacks alive at once, held to grammar_stacks. A definition that reaches itself before writing anything is
// left recursion, which llama.cpp refuses.
import type { GbnfJsonSchema } from "node-llama-cpp";
import { SchemaError, SCHEMA_LIMITS, type SchemaBudget } from "./bounds.ts";
import { isObj, type Obj } from "./keywords.ts";

/** llama.cpp's MAX_REPETITION_THRESHOLD: a {m,n} with n above it is read as {m,} (one rule). */
export const LLAMA_MAX_REPETITION = 2000;
/**
 * Leading paths llama.cpp walks per step of the budget: about 30 ns each, twice a session, against a step's 1.7 µs.
 * (The chain of the issue: 2^(depth+2) paths, 34 ms at depth 18.) A rule a repetition writes out costs about a step.
 */
const PATHS_PER_STEP = 25;
/** The most leading paths one schema's grammar may have: what the whole step budget pays for. */
export const MAX_LEADING_PATHS = SCHEMA_LIMITS.schema_steps * PATHS_PER_STEP;
/** A literal prefix is compared only this far: a shorter one only makes more branches count as alike. */
const PREFIX_CHARS = 256;
/** Passes over a recursive schema before its stacks are taken to grow with nesting. */
const MAX_PASSES = 3;

/** One of svc's own GBNF rules (a format, a range, a pattern); `width`: how many of its rules llama.cpp may hold alive at once. */
export interface PreparedRule {
  name: string;
  gbnf: string;
  width: number;
}

/** What the grammar of a schema costs llama.cpp. */
export interface GrammarWork {
  /** Paths of leading rule references llama.cpp walks when it builds the grammar. */
  paths: number;
  /** Rules its {m,n} repetitions write out. */
  repeatedRules: number;
  /** Stacks that can be alive at once while a token is sampled. */
  stacks: number;
}

/** The first character of a value, by kind: two branches can both be alive only if their kinds meet. */
const STR = 1, NUM = 2, BOOL = 4, NULL = 8, OBJ = 16, ARR = 32, ANY = 63;

interface Shape {
  /** Leading paths from this node's rule (llama.cpp's left-recursion walk from it). */
  paths: number;
  /** Stacks alive at once inside this node's text. */
  stacks: number;
  /** The kinds its first character may be. */
  kinds: number;
  /** Text (whitespace left out) every value begins with, when `kinds` is one kind; "" when unknown. */
  prefix: string;
  /** `prefix` is the whole value (a const). */
  whole: boolean;
}

/**
 * The work of `schema`'s grammar (`rules`: svc's own rules by placeholder name), charged to `budget`; a SchemaError at the
 * place where it passes a bound. `pathOf` gives a prepared node's JSON pointer in the caller's schema.
 */
export function grammarWork(schema: GbnfJsonSchema, rules: readonly PreparedRule[], budget: SchemaBudget, pathOf: (node: object) => string | undefined): GrammarWork {
  return new Counter(schema as unknown as Obj, rules, budget, pathOf).run();
}

class Counter {
  private readonly defs: Obj;
  private readonly svcRules = new Map<string, { kinds: number; width: number }>();
  private pass = 1;
  /** Stacks a definition is taken to hold where it is reached inside itself (the last pass's count). */
  private assumed = new Map<string, number>();
  private done = new Map<string, Shape>();
  /** Definitions being counted, outermost first. */
  private readonly open: string[] = [];
  /** The first of `open` from whose start nothing has been written yet: reaching it again is left recursion. */
  private leadingFrom = 0;
  /** How each definition's values begin, found from its leading part alone (so also while it is being counted). */
  private readonly leads = new Map<string, Pick<Shape, "kinds" | "prefix">>();
  /** Definitions reached inside themselves in this pass, with the stacks assumed there. */
  private heads = new Map<string, number>();
  private readonly entered = new Set<string>();
  private readonly repetitions = new Set<string>();
  private nodes = 0;
  private readonly work: GrammarWork = { paths: 0, repeatedRules: 0, stacks: 0 };

  constructor(
    private readonly root: Obj,
    rules: readonly PreparedRule[],
    private readonly budget: SchemaBudget,
    private readonly pathOf: (node: object) => string | undefined,
  ) {
    this.defs = isObj(root.$defs) ? root.$defs : {};
    for (const { name, gbnf, width } of rules) this.svcRules.set(name, { kinds: gbnf.startsWith('"\\""') ? STR : NUM, width });
  }

  run(): GrammarWork {
    for (;;) {
      const shape = this.entry(this.root, "");
      this.work.stacks = shape.stacks;
      // a recursive schema: its count holds when each definition reached inside itself was assumed what it came to
      const grown = [...this.heads].find(([name, assumed]) => this.done.get(name)!.stacks > assumed);
      this.budget.step("", Math.ceil(this.nodes / 8)); // the walk itself: about an eighth of a preparation step a node
      this.nodes = 0;
      if (grown === undefined) return this.work;
      if (this.pass === MAX_PASSES) {
        throw this.tooComplex(this.defPath(grown[0]), "a oneOf/anyOf whose branches begin alike refers back to itself, so the readings llama.cpp keeps grow with every level the answer nests");
      }
      this.assumed = new Map([...this.done].map(([name, s]) => [name, s.stacks]));
      this.done = new Map();
      this.heads = new Map();
      this.pass++;
    }
  }

  /**
   * A node written after something else in its rule (the root, a property's value, an item): llama.cpp's
   * left-recursion walk starts from its rule once more, so its leading paths count again (a definition's, once).
   */
  private entry(node: unknown, path: string): Shape {
    const outer = this.leadingFrom;
    this.leadingFrom = this.open.length; // the definitions open around it have written something before it
    const ref = isObj(node) && typeof node.$ref === "string" ? defName(node.$ref) : undefined;
    const shape = this.shape(node, path);
    this.leadingFrom = outer;
    if (this.pass === 1 && (ref === undefined || !this.entered.has(ref))) {
      if (ref !== undefined) this.entered.add(ref);
      this.work.paths += shape.paths;
      this.budget.step(path, Math.ceil(shape.paths / PATHS_PER_STEP));
    }
    return shape;
  }

  private shape(node: unknown, parentPath: string): Shape {
    this.nodes++;
    if (!isObj(node)) return ANY_VALUE;
    const path = this.pathOf(node) ?? parentPath;
    if (typeof node.$ref === "string") return this.ref(defName(node.$ref), path);
    if (Array.isArray(node.oneOf)) return this.oneOf(node.oneOf, path);
    if ("const" in node) {
      const rule = typeof node.const === "string" ? this.svcRules.get(node.const) : undefined;
      if (rule !== undefined) return { paths: 2, stacks: this.held(rule.width, path), kinds: rule.kinds, prefix: rule.kinds === STR ? '"' : "", whole: false };
      return literal(node.const);
    }
    if (Array.isArray(node.enum)) return this.enumShape(node.enum, path);
    const type = node.type;
    if (type === "object") return this.object(node, path);
    if (type === "array") return this.array(node, path);
    if (type === "string") {
      this.repeat(`string ${node.minLength} ${node.maxLength}`, node.minLength, node.maxLength, path);
      return { paths: 1, stacks: 1, kinds: STR, prefix: '"', whole: false };
    }
    const types = Array.isArray(type) ? type : [type];
    const kinds = types.reduce((k: number, t) => k | kindOfType(t), 0);
    // integer and number both begin with a digit: two readings of one value
    const numbers = types.filter((t) => t === "number" || t === "integer").length;
    return { paths: types.length === 1 ? 4 : 2 + 4 * types.length, stacks: Math.max(1, numbers), kinds, prefix: "", whole: false };
  }

  private ref(name: string, path: string): Shape {
    const found = this.done.get(name);
    if (found) return { ...found, paths: found.paths + 1 };
    const at = this.open.indexOf(name);
    if (at >= 0) {
      if (at >= this.leadingFrom) {
        throw new SchemaError(path, "this $ref reaches its own definition before the value writes a character (left recursion), which llama.cpp's grammar cannot take");
      }
      const assumed = this.assumed.get(name) ?? 1;
      this.heads.set(name, assumed);
      return { paths: 1, stacks: assumed, ...this.lead(name), whole: false };
    }
    const def = this.defs[name];
    if (def === undefined) return ANY_VALUE;
    this.open.push(name);
    try {
      const shape = this.shape(def, this.defPath(name));
      this.done.set(name, shape);
      return { ...shape, paths: shape.paths + 1 };
    } finally {
      this.open.pop();
    }
  }

  /** A oneOf: its branches' paths add up; the stacks of branches that can begin alike add up too, the rest do not meet. */
  private oneOf(branches: unknown[], path: string): Shape {
    const shapes: Shape[] = [];
    const refs = new Set<string>();
    let paths = 2; // the group llama.cpp makes of "( a | b )", and the rule naming it
    for (const branch of branches) {
      const shape = this.shape(branch, path);
      paths += shape.paths;
      if (paths > MAX_LEADING_PATHS) throw this.tooManyPaths(path);
      // two branches naming one definition are one rule: llama.cpp merges their stacks
      const ref = isObj(branch) && typeof branch.$ref === "string" ? branch.$ref : undefined;
      if (ref !== undefined && refs.has(ref)) continue;
      if (ref !== undefined) refs.add(ref);
      shapes.push(shape);
    }
    const stacks = alike(shapes).reduce((most, group) => Math.max(most, group.reduce((sum, s) => sum + s.stacks, 0)), 0);
    this.budget.step(path, Math.ceil(shapes.length / 16));
    const kinds = shapes.reduce((k, s) => k | s.kinds, 0);
    const prefixes = shapes.map((s) => s.prefix);
    return { paths, stacks: this.held(stacks, path), kinds, prefix: single(kinds) ? commonPrefix(prefixes) : "", whole: false };
  }

  private enumShape(members: unknown[], path: string): Shape {
    const texts = members.map((m) => (JSON.stringify(typeof m === "string" ? m.slice(0, PREFIX_CHARS) : m) ?? "").slice(0, PREFIX_CHARS));
    // literals alike in their first two characters are all alive after them
    const groups = new Map<string, number>();
    for (const text of texts) groups.set(text.slice(0, 2), (groups.get(text.slice(0, 2)) ?? 0) + 1);
    const kinds = members.reduce((k: number, m) => k | literal(m).kinds, 0);
    return { paths: 2 + members.length, stacks: this.held(Math.max(1, ...groups.values()), path), kinds, prefix: single(kinds) ? commonPrefix(texts) : "", whole: texts.length === 1 };
  }

  private object(node: Obj, path: string): Shape {
    let stacks = 1;
    let prefix = "{";
    let open = true; // the prefix still runs on: every value so far is a const
    const properties = isObj(node.properties) ? Object.entries(node.properties) : [];
    for (const [name, value] of properties) {
      const shape = this.entry(value, path);
      stacks = Math.max(stacks, shape.stacks);
      if (open) {
        prefix += `${prefix === "{" ? "" : ","}${JSON.stringify(name)}:${shape.prefix}`;
        open = shape.whole;
      }
    }
    const extra = node.additionalProperties;
    if (isObj(extra)) stacks = Math.max(stacks, this.entry(extra, path).stacks);
    if (extra !== undefined && extra !== false && typeof node.maxProperties === "number") this.repeat(undefined, node.minProperties, node.maxProperties, path);
    return { paths: 1, stacks, kinds: OBJ, prefix: prefix.slice(0, PREFIX_CHARS), whole: false };
  }

  private array(node: Obj, path: string): Shape {
    let stacks = 1;
    let prefix = "[";
    const prefixItems = Array.isArray(node.prefixItems) ? node.prefixItems : [];
    prefixItems.forEach((item, i) => {
      const shape = this.entry(item, path);
      stacks = Math.max(stacks, shape.stacks);
      if (i === 0) prefix += shape.prefix;
    });
    if (node.items !== undefined) stacks = Math.max(stacks, this.entry(node.items, path).stacks);
    // node-llama-cpp writes each array's own rule: the same counts of the same definition's items are one
    const items = isObj(node.items) ? node.items.$ref : undefined;
    this.repeat(node.items === undefined || typeof items === "string" ? `array ${node.minItems} ${node.maxItems} ${items}` : undefined, node.minItems, node.maxItems, path);
    return { paths: 1, stacks, kinds: ARR, prefix: prefix.slice(0, PREFIX_CHARS), whole: false };
  }

  /** A {min,max} repetition: llama.cpp writes a rule for each optional repeat, at most LLAMA_MAX_REPETITION of them. */
  private repeat(key: string | undefined, min: unknown, max: unknown, path: string): void {
    if (this.pass !== 1 || typeof max !== "number") return;
    if (key !== undefined) {
      if (this.repetitions.has(key)) return;
      this.repetitions.add(key);
    }
    const lower = typeof min === "number" ? min : 0;
    const rules = max > LLAMA_MAX_REPETITION ? 1 : Math.max(1, max - lower);
    this.work.repeatedRules += rules;
    this.budget.step(path, rules);
  }

  /** How a definition's values begin, from its leading part: what a oneOf needs of a definition reached inside itself. */
  private lead(name: string): Pick<Shape, "kinds" | "prefix"> {
    let found = this.leads.get(name);
    if (found === undefined) {
      this.leads.set(name, { kinds: ANY, prefix: "" }); // only left recursion comes back to it, and that is refused
      found = this.leadOf(this.defs[name]);
      this.leads.set(name, found);
    }
    return found;
  }

  private leadOf(node: unknown): Pick<Shape, "kinds" | "prefix"> {
    this.nodes++;
    if (!isObj(node)) return { kinds: ANY, prefix: "" };
    if (typeof node.$ref === "string") return this.lead(defName(node.$ref));
    if (Array.isArray(node.oneOf)) {
      const branches = node.oneOf.map((branch) => this.leadOf(branch));
      const kinds = branches.reduce((k, b) => k | b.kinds, 0);
      return { kinds, prefix: single(kinds) ? commonPrefix(branches.map((b) => b.prefix)) : "" };
    }
    if ("const" in node) {
      const rule = typeof node.const === "string" ? this.svcRules.get(node.const) : undefined;
      return rule === undefined ? literal(node.const) : { kinds: rule.kinds, prefix: rule.kinds === STR ? '"' : "" };
    }
    if (Array.isArray(node.enum)) return this.leadOf({ oneOf: node.enum.map((member) => ({ const: member })) });
    if (node.type === "object") return { kinds: OBJ, prefix: "{" };
    if (node.type === "array") return { kinds: ARR, prefix: "[" };
    if (node.type === "string") return { kinds: STR, prefix: '"' };
    const types = Array.isArray(node.type) ? node.type : [node.type];
    return { kinds: types.reduce((k: number, t) => k | kindOfType(t), 0), prefix: "" };
  }

  private held(stacks: number, path: string): number {
    if (stacks > SCHEMA_LIMITS.grammar_stacks) {
      throw this.tooComplex(path, `its grammar can hold more than ${SCHEMA_LIMITS.grammar_stacks} readings of the answer at once, each checked against every token: the branches of a oneOf/anyOf that begin alike are all followed, and each level they nest multiplies them (schema limit grammar_stacks)`);
    }
    return stacks;
  }

  private tooManyPaths(path: string): SchemaError {
    return this.tooComplex(path, `its grammar branches into more than ${MAX_LEADING_PATHS} paths before the value writes a character (each oneOf/anyOf adds the paths of its branches, and each $ref repeats its definition's), and llama.cpp walks every one of them to build the grammar`);
  }

  private tooComplex(path: string, why: string): SchemaError {
    return new SchemaError(path, `the schema needs more work than svc spends on one request: ${why}; simplify it`, "schema_too_complex");
  }

  private defPath(name: string): string {
    const def = this.defs[name];
    return (isObj(def) && this.pathOf(def)) || `/$defs/${name}`;
  }
}

const ANY_VALUE: Shape = { paths: 1, stacks: 1, kinds: ANY, prefix: "", whole: false };

/** A type node-llama-cpp writes as a plain rule (no type at all it writes as null). */
const kindOfType = (type: unknown) => (type === "string" ? STR : type === "number" || type === "integer" ? NUM : type === "boolean" ? BOOL : NULL);

const defName = (ref: string) => decodeURIComponent(ref.replace(/^#\/\$defs\//, ""));

function literal(value: unknown): Shape {
  const text = (JSON.stringify(value) ?? "null").slice(0, PREFIX_CHARS);
  const kinds = typeof value === "string" ? STR : typeof value === "number" ? NUM : typeof value === "boolean" ? BOOL : value === null ? NULL : Array.isArray(value) ? ARR : OBJ;
  return { paths: 1, stacks: 1, kinds, prefix: text, whole: true };
}

const single = (kinds: number) => kinds !== 0 && (kinds & (kinds - 1)) === 0;

function commonPrefix(texts: readonly string[]): string {
  let out = texts[0] ?? "";
  for (const text of texts) {
    let i = 0;
    while (i < out.length && out[i] === text[i]) i++;
    out = out.slice(0, i);
  }
  return out;
}

/**
 * The branches in groups that can be alive together: two meet when their first characters may be of one kind and
 * neither's known prefix leaves the other's (sorted, each prefix's extensions follow it, so a group is one run).
 */
function alike(shapes: readonly Shape[]): Shape[][] {
  if (shapes.length < 2) return shapes.map((s) => [s]);
  const parent = shapes.map((_, i) => i);
  const find = (i: number): number => (parent[i] === i ? i : (parent[i] = find(parent[i]!)));
  const join = (a: number, b: number) => void (parent[find(a)] = find(b));
  const byKind = new Map<number, number[]>();
  shapes.forEach((s, i) => {
    for (let bit = 1; bit <= s.kinds; bit <<= 1) {
      if (!(s.kinds & bit)) continue;
      const members = byKind.get(bit);
      if (members) members.push(i);
      else byKind.set(bit, [i]);
    }
  });
  for (const members of byKind.values()) {
    if (members.length < 2) continue;
    if (members.some((i) => !single(shapes[i]!.kinds) || shapes[i]!.prefix === "")) {
      for (const i of members) join(i, members[0]!);
      continue;
    }
    members.sort((a, b) => (shapes[a]!.prefix < shapes[b]!.prefix ? -1 : shapes[a]!.prefix > shapes[b]!.prefix ? 1 : 0));
    let head = members[0]!;
    for (const i of members.slice(1)) {
      if (shapes[i]!.prefix.startsWith(shapes[head]!.prefix)) join(i, head);
      else head = i;
    }
  }
  const groups = new Map<number, Shape[]>();
  shapes.forEach((s, i) => {
    const root = find(i);
    const group = groups.get(root);
    if (group) group.push(s);
    else groups.set(root, [s]);
  });
  return [...groups.values()];
}
