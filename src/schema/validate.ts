// Checks a parsed JSON value against a JSON Schema (2020-12, with draft-07's array `items` and `definitions`): prepare.ts
// keeps only the const/enum members the schema's other keywords allow, and the tests check generated answers with it.
// svc does not check an answer after generation (docs/api.md): what the grammar cannot enforce is refused under strict,
// else listed as not enforced. Kept over ajv, @cfworker/json-schema and @exodus/schemasafe (measured for issue 29:
// they are faster per value, but run a caller's pattern on backtracking RegExp and have no step budget, and the
// enum filter here costs about 2 ms for 1,000 members); node-llama-cpp's validateObjectAgainstGbnfSchema knows a subset.
import type { RE2JS } from "re2js";
import { SchemaBudget } from "./bounds.ts";
import { isIPv4, isIPv6 } from "./ip-address.ts";
import { pointer, pointerKeys } from "./json-pointer.ts";
import type { PatternResult } from "./pattern.ts";
import { zodFormatPattern } from "./zod-patterns.ts";

export interface ValueProblem {
  /** JSON pointer into the value ("" is the value itself). */
  path: string;
  message: string;
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** The subschema a local `$ref` ("#", "#/$defs/x", "#/properties/a", URI-escaped) points at, if any. */
export function resolveLocalRef(root: unknown, ref: string): unknown {
  if (!ref.startsWith("#")) return undefined;
  let path: string;
  try {
    path = decodeURIComponent(ref.slice(1));
  } catch {
    return undefined;
  }
  if (path === "") return root;
  if (!path.startsWith("/")) return undefined; // "#anchor" names
  let node: unknown = root;
  for (const key of pointerKeys(path)) {
    if (Array.isArray(node) && /^\d+$/.test(key)) node = node[Number(key)];
    else if (isObj(node) && Object.hasOwn(node, key)) node = node[key];
    else return undefined;
  }
  return node;
}

/** Whether two JSON values are equal; `tick` is called once per value compared (to charge a SchemaBudget). */
export function deepEqual(a: unknown, b: unknown, tick?: () => void): boolean {
  tick?.();
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((v, i) => deepEqual(v, b[i], tick));
  if (!isObj(a) || !isObj(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k], tick));
}

function typeOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v === "number" ? (Number.isInteger(v) ? "integer" : "number") : typeof v;
}

const hasType = (v: unknown, type: unknown) => type === typeOf(v) || (type === "number" && typeOf(v) === "integer");

const DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
function isDate(s: string): boolean {
  const m = /^(\d{4})-(\d\d)-(\d\d)$/.exec(s);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return month >= 1 && month <= 12 && day >= 1 && day <= (month === 2 && !leap ? 28 : DAYS[month - 1]!);
}
const TIME = /^([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([zZ]|[+-]([01]\d|2[0-3]):[0-5]\d)$/;
/** The formats OpenAI's strict mode names; others are annotations, as JSON Schema 2020-12 says by default. */
const FORMATS: Record<string, (s: string) => boolean> = {
  date: isDate,
  time: (s) => TIME.test(s),
  "date-time": (s) => {
    const [date, time, extra] = s.split(/[tT]/);
    return extra === undefined && time !== undefined && isDate(date!) && TIME.test(time);
  },
  email: (s) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(s),
  uuid: (s) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s),
  duration: (s) => /^P(?!$)(\d+W|(\d+Y)?(\d+M)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+S)?)?)$/.test(s) && !/T$/.test(s),
  hostname: (s) => s.length <= 253 && /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i.test(s),
  ipv6: isIPv6,
  ipv4: isIPv4,
};

/**
 * Every way `value` breaks `schema`; [] when it conforms. `root` resolves `$ref`s (defaults to `schema`). The work
 * is drawn from `budget` (a SchemaError once it is spent); patterns run on RE2 (src/schema/pattern.ts).
 */
export function validate(value: unknown, schema: unknown, root: unknown = schema, budget = new SchemaBudget()): ValueProblem[] {
  const problems: ValueProblem[] = [];
  check(value, schema, "", { root, budget }, problems, 0);
  return problems;
}

interface Walk {
  root: unknown;
  budget: SchemaBudget;
}

const valid = (value: unknown, schema: unknown, walk: Walk, depth: number) => {
  const problems: ValueProblem[] = [];
  check(value, schema, "", walk, problems, depth);
  return problems.length === 0;
};

function check(value: unknown, schema: unknown, at: string, walk: Walk, out: ValueProblem[], depth: number): void {
  const fail = (message: string, path = at) => void out.push({ path, message });
  const { root, budget } = walk;
  budget.step(at);
  if (depth > 256) return fail("schema nests too deeply (a $ref loop?)");
  if (schema === true || schema === undefined) return;
  if (schema === false) return fail("no value is allowed here");
  if (!isObj(schema)) return fail("the schema here is not an object");
  const s = schema;
  const sub = (v: unknown, sc: unknown, path: string) => check(v, sc, path, walk, out, depth + 1);
  const ok = (v: unknown, sc: unknown) => valid(v, sc, walk, depth + 1);
  if (typeof value === "number" && !Number.isFinite(value)) fail("is not a finite number");

  if (typeof s.$ref === "string") {
    budget.expandRef(at);
    const target = resolveLocalRef(root, s.$ref);
    if (target === undefined) fail(`$ref ${s.$ref} cannot be resolved`);
    else sub(value, target, at);
  }
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? s.type : [s.type];
    if (!types.some((t) => hasType(value, t))) fail(`expected ${types.join(" or ")}, got ${typeOf(value)}`);
  }
  const tick = () => budget.step(at);
  if (Array.isArray(s.enum) && !s.enum.some((e) => deepEqual(e, value, tick))) fail(`is not one of ${JSON.stringify(s.enum)}`);
  if ("const" in s && !deepEqual(s.const, value, tick)) fail(`must be ${JSON.stringify(s.const)}`);

  if (Array.isArray(s.allOf)) s.allOf.forEach((b) => sub(value, b, at));
  if (Array.isArray(s.anyOf) && !s.anyOf.some((b) => ok(value, b))) fail("matches no anyOf branch");
  if (Array.isArray(s.oneOf)) {
    const n = s.oneOf.filter((b) => ok(value, b)).length;
    if (n !== 1) fail(`matches ${n} oneOf branches, not exactly one`);
  }
  if (s.not !== undefined && ok(value, s.not)) fail("matches the schema under not");
  if (s.if !== undefined) {
    const branch = ok(value, s.if) ? s.then : s.else;
    if (branch !== undefined) sub(value, branch, at);
  }

  if (typeof value === "string") checkString(value, s, fail, (source) => budget.compiled(source, at), (re) => budget.test(re, value, at), () => budget.step(at, 4 + Math.ceil(value.length / 64)));
  if (typeof value === "number") checkNumber(value, s, fail);
  if (Array.isArray(value)) checkArray(value, s, at, sub, fail, ok, budget);
  if (isObj(value)) checkObject(value, s, at, sub, fail, ok, budget);
}

type Fail = (message: string, path?: string) => void;
type Sub = (value: unknown, schema: unknown, path: string) => void;
type Valid = (value: unknown, schema: unknown) => boolean;
const num = (v: unknown): v is number => typeof v === "number";

function checkString(value: string, s: Obj, fail: Fail, compiled: (source: string) => PatternResult, test: (re: RE2JS) => boolean, charge: () => void): void {
  const length = [...value].length; // JSON Schema counts code points
  if (num(s.minLength) && length < s.minLength) fail(`is shorter than ${s.minLength} characters`);
  if (num(s.maxLength) && length > s.maxLength) fail(`is longer than ${s.maxLength} characters`);
  const zod = zodFormatPattern(s.format, s.pattern);
  if (zod) charge();
  if (zod && !zod.test(value)) fail(`does not match pattern ${JSON.stringify(s.pattern)}`);
  else if (!zod && typeof s.pattern === "string") {
    const found = compiled(s.pattern);
    if (!found.ok) fail(`the schema's pattern ${JSON.stringify(s.pattern)} is not a valid regular expression for RE2: it ${found.why}`);
    else if (!test(found.re)) fail(`does not match pattern ${JSON.stringify(s.pattern)}`);
  }
  const format = typeof s.format === "string" ? FORMATS[s.format] : undefined;
  if (format && !format(value)) fail(`is not a valid ${s.format}`);
}

function checkNumber(value: number, s: Obj, fail: Fail): void {
  // draft-04's boolean exclusiveMinimum/exclusiveMaximum modify minimum/maximum
  if (num(s.minimum) && (s.exclusiveMinimum === true ? value <= s.minimum : value < s.minimum)) fail(`is below the minimum ${s.minimum}`);
  if (num(s.maximum) && (s.exclusiveMaximum === true ? value >= s.maximum : value > s.maximum)) fail(`is above the maximum ${s.maximum}`);
  if (num(s.exclusiveMinimum) && value <= s.exclusiveMinimum) fail(`is not above ${s.exclusiveMinimum}`);
  if (num(s.exclusiveMaximum) && value >= s.exclusiveMaximum) fail(`is not below ${s.exclusiveMaximum}`);
  if (num(s.multipleOf) && s.multipleOf > 0) {
    const q = value / s.multipleOf;
    if (Math.abs(q - Math.round(q)) > 1e-9 * Math.max(1, Math.abs(q))) fail(`is not a multiple of ${s.multipleOf}`);
  }
}

function checkArray(value: unknown[], s: Obj, at: string, sub: Sub, fail: Fail, ok: Valid, budget: SchemaBudget): void {
  // draft-07 tuples: `items` as an array, `additionalItems` for the rest
  const prefix = Array.isArray(s.prefixItems) ? s.prefixItems : Array.isArray(s.items) ? s.items : [];
  const rest = Array.isArray(s.items) ? s.additionalItems : s.items;
  value.forEach((item, i) => {
    if (i < prefix.length) sub(item, prefix[i], pointer(at, i));
    else if (rest === false) fail(`has an item beyond the ${prefix.length} allowed`, pointer(at, i));
    else if (rest !== undefined) sub(item, rest, pointer(at, i));
  });
  if (num(s.minItems) && value.length < s.minItems) fail(`has fewer than ${s.minItems} items`);
  if (num(s.maxItems) && value.length > s.maxItems) fail(`has more than ${s.maxItems} items`);
  if (s.uniqueItems === true) budget.step(at, (value.length * value.length) / 2);
  if (s.uniqueItems === true && value.some((v, i) => value.findIndex((w) => deepEqual(v, w)) !== i)) fail("has duplicate items");
  if (s.contains !== undefined) {
    const n = value.filter((v) => ok(v, s.contains)).length;
    const min = num(s.minContains) ? s.minContains : 1;
    if (n < min) fail(`has ${n} items matching contains, fewer than ${min}`);
    if (num(s.maxContains) && n > s.maxContains) fail(`has ${n} items matching contains, more than ${s.maxContains}`);
  }
}

function checkObject(value: Obj, s: Obj, at: string, sub: Sub, fail: Fail, ok: Valid, budget: SchemaBudget): void {
  const properties = isObj(s.properties) ? s.properties : {};
  const patterns = isObj(s.patternProperties) ? Object.entries(s.patternProperties) : [];
  const keys = Object.keys(value);
  for (const key of keys) {
    const path = pointer(at, key);
    let matched = Object.hasOwn(properties, key);
    if (matched) sub(value[key], properties[key], path);
    for (const [pattern, schema] of patterns) {
      const found = budget.compiled(pattern, path);
      if (!found.ok) fail(`the schema's patternProperties key ${JSON.stringify(pattern)} is not a valid regular expression for RE2: it ${found.why}`);
      if (found.ok && budget.test(found.re, key, path)) {
        matched = true;
        sub(value[key], schema, path);
      }
    }
    if (!matched && s.additionalProperties === false) fail("is not an allowed property", path);
    else if (!matched && s.additionalProperties !== undefined) sub(value[key], s.additionalProperties, path);
    if (s.propertyNames !== undefined && !ok(key, s.propertyNames)) fail("is not an allowed property name", path);
  }
  if (Array.isArray(s.required)) {
    for (const name of s.required) if (typeof name === "string" && !Object.hasOwn(value, name)) fail(`lacks required property ${JSON.stringify(name)}`);
  }
  if (num(s.minProperties) && keys.length < s.minProperties) fail(`has fewer than ${s.minProperties} properties`);
  if (num(s.maxProperties) && keys.length > s.maxProperties) fail(`has more than ${s.maxProperties} properties`);
  if (isObj(s.dependentRequired)) {
    for (const [name, needs] of Object.entries(s.dependentRequired)) {
      if (!Object.hasOwn(value, name) || !Array.isArray(needs)) continue;
      for (const need of needs) if (typeof need === "string" && !Object.hasOwn(value, need)) fail(`has ${JSON.stringify(name)} but lacks ${JSON.stringify(need)}`);
    }
  }
  if (isObj(s.dependentSchemas)) {
    for (const [name, schema] of Object.entries(s.dependentSchemas)) if (Object.hasOwn(value, name)) sub(value, schema, at);
  }
}
