// The JSON Schema checker the tests read answers with (src/schema/validate.ts) and the JSON text normaliser (agent/engine/grammar/json-text.ts).
import { describe, expect, it } from "vitest";
import { pointer, pointerKeys } from "../../../../src/schema/json-pointer.ts";
import { SchemaBudget } from "../../../../src/schema/bounds.ts";
import { resolveLocalRef, validate } from "../../../../src/schema/validate.ts";
import { normalizeJsonText } from "../../../../agent/engine/grammar/json-text.ts";

const ok = (value: unknown, schema: unknown) => expect(validate(value, schema), JSON.stringify(value)).toEqual([]);
const bad = (value: unknown, schema: unknown, path = "") =>
  expect(validate(value, schema).map((p) => p.path), JSON.stringify(value)).toContain(path);

describe("validate", () => {
  it("types, integer included (1.0 is an integer, 1.5 is not)", () => {
    ok(1, { type: "integer" });
    ok(1.0, { type: "integer" });
    bad(1.5, { type: "integer" });
    ok(1.5, { type: "number" });
    ok(null, { type: ["string", "null"] });
    bad([], { type: "object" });
    bad({}, { type: "array" });
    bad(Infinity, { type: "number" });
  });

  it("pattern (unanchored, unicode), and a bad pattern is a problem, not a crash", () => {
    ok("abc", { pattern: "^[a-z]+$" });
    bad("aBc", { pattern: "^[a-z]+$" });
    ok("xx1yy", { pattern: "\\d" });
    expect(validate("x", { pattern: "(" })[0]?.message).toContain("not a valid regular expression");
  });

  it("patterns run on RE2: no backtracking blow-up, ECMA-262 spellings translated, backreferences and lookaround refused", () => {
    // on JavaScript's RegExp this one input takes longer than the test's time limit
    bad(`${"a".repeat(60)}b`, { pattern: "^(a|aa)+$" });
    ok("a".repeat(60), { pattern: "^(a|aa)+$" });
    ok("ab12", { pattern: "^(?<word>[a-z]+)\\d+$" });
    ok("A", { pattern: "^\\u0041$" });
    ok("é", { pattern: "^\\p{L}$" });
    expect(validate("aa", { pattern: "^(a)\\1$" })[0]?.message).toContain("backreference");
    expect(validate("a", { pattern: "^(?=a)a" })[0]?.message).toContain("lookaround");
    expect(validate({ ab: 1 }, { patternProperties: { "(?<=a)b": {} } })[0]?.message).toContain("lookaround");
  });

  it("a walk past its budget throws schema_too_complex instead of running on", () => {
    const loop = { allOf: [{ $ref: "#" }, { $ref: "#" }] };
    expect(() => validate("x", loop, loop, new SchemaBudget(500))).toThrow(expect.objectContaining({ code: "schema_too_complex" }));
  });

  it("minimum, maximum, exclusive bounds (2020-12 numbers and draft-04 booleans), multipleOf", () => {
    ok(10, { minimum: 10, maximum: 10 });
    bad(9, { minimum: 10 });
    bad(11, { maximum: 10 });
    bad(0, { exclusiveMinimum: 0 });
    ok(0.1, { exclusiveMinimum: 0 });
    bad(0, { exclusiveMaximum: 0 });
    bad(10, { minimum: 10, exclusiveMinimum: true });
    ok(15, { multipleOf: 5 });
    ok(0.3, { multipleOf: 0.1 });
    bad(7, { multipleOf: 5 });
  });

  it("minLength and maxLength count code points, not UTF-16 units", () => {
    ok("😀😀", { maxLength: 2 });
    bad("😀😀😀", { maxLength: 2 });
    bad("a", { minLength: 2 });
  });

  it("enum and const compare deeply", () => {
    ok({ a: [1] }, { const: { a: [1] } });
    bad({ a: [2] }, { const: { a: [1] } });
    ok("x", { enum: ["x", 1, null] });
    bad("y", { enum: ["x", 1, null] });
  });

  it("objects: properties, required, additionalProperties, patternProperties, counts, dependentRequired", () => {
    const schema = { type: "object", properties: { a: { type: "integer" } }, required: ["a"], additionalProperties: false };
    ok({ a: 1 }, schema);
    bad({}, schema);
    bad({ a: 1, b: 2 }, schema, "/b");
    bad({ a: "1" }, schema, "/a");
    ok({ x1: 1 }, { patternProperties: { "^x": { type: "integer" } }, additionalProperties: false });
    bad({ x1: "s" }, { patternProperties: { "^x": { type: "integer" } } }, "/x1");
    bad({ b: "s" }, { additionalProperties: { type: "integer" } }, "/b");
    bad({ a: 1 }, { minProperties: 2 });
    bad({ a: 1, b: 2 }, { maxProperties: 1 });
    bad({ a: 1 }, { dependentRequired: { a: ["b"] } });
    bad({ long: 1 }, { propertyNames: { maxLength: 2 } }, "/long");
  });

  it("arrays: items, prefixItems, items:false, draft-07 tuples, counts, uniqueItems, contains", () => {
    ok([1, 2], { items: { type: "integer" } });
    bad([1, "2"], { items: { type: "integer" } }, "/1");
    ok(["a", 1, 2], { prefixItems: [{ type: "string" }], items: { type: "integer" } });
    bad(["a", 1], { prefixItems: [{ type: "string" }], items: false }, "/1");
    bad([1, 2, "x"], { items: [{ type: "integer" }], additionalItems: { type: "integer" } }, "/2");
    bad([1], { minItems: 2 });
    bad([1, 2, 3], { maxItems: 2 });
    bad([1, 1], { uniqueItems: true });
    bad([2, 3], { contains: { const: 1 } });
  });

  it("combinators: oneOf means exactly one, anyOf at least one, allOf each, not, if/then/else", () => {
    ok(1, { oneOf: [{ type: "integer" }, { type: "string" }] });
    bad(1, { oneOf: [{ type: "integer" }, { type: "number" }] }); // matches both
    ok("s", { anyOf: [{ type: "integer" }, { type: "string" }] });
    bad(true, { anyOf: [{ type: "integer" }, { type: "string" }] });
    bad(5, { allOf: [{ minimum: 1 }, { maximum: 4 }] });
    bad(3, { not: { const: 3 } });
    bad({ a: 1 }, { if: { required: ["a"] }, then: { required: ["b"] } });
    ok({ c: 1 }, { if: { required: ["a"] }, then: { required: ["b"] } });
  });

  it("formats: date checks the calendar, time needs an offset, date-time both", () => {
    ok("2024-02-29", { format: "date" });
    bad("2023-02-29", { format: "date" });
    bad("2023-04-31", { format: "date" });
    ok("23:59:60.5+01:00", { format: "time" });
    bad("24:00:00Z", { format: "time" });
    bad("12:00:00", { format: "time" });
    ok("2024-01-02T03:04:05Z", { format: "date-time" });
    bad("2024-01-02 03:04:05Z", { format: "date-time" });
    ok("123e4567-e89b-12d3-a456-426614174000", { format: "uuid" });
    bad("nope", { format: "email" });
    ok("anything", { format: "unknown-format" }); // an annotation, as 2020-12 says
  });

  it("follows local $refs, recursion included, and says when one points nowhere", () => {
    const tree = { type: "object", properties: { kids: { type: "array", items: { $ref: "#" } } }, additionalProperties: false };
    ok({ kids: [{ kids: [] }] }, tree);
    bad({ kids: [{ kid: 1 }] }, tree, "/kids/0/kid");
    ok(1, { $ref: "#/definitions/n", definitions: { n: { type: "integer" } } });
    ok(1, { $ref: "#/$defs/a~1b", $defs: { "a/b": { type: "integer" } } });
    expect(validate(1, { $ref: "#/$defs/nope" })[0]?.message).toContain("cannot be resolved");
    expect(resolveLocalRef({ a: [{ b: 2 }] }, "#/a/0/b")).toBe(2);
    expect(resolveLocalRef({}, "https://x/y")).toBeUndefined();
  });

  it("boolean schemas", () => {
    ok(1, true);
    bad(1, false);
  });
});

describe("JSON Pointer (RFC 6901)", () => {
  it("escapes ~ as ~0 and / as ~1 a key at a time, and reads the keys back", () => {
    const path = pointer(pointer(pointer("", "properties"), "a~/b"), 0);
    expect(path).toBe("/properties/a~0~1b/0");
    expect(pointerKeys(path)).toEqual(["properties", "a~/b", "0"]);
    // ~01 is an escaped ~ then a 1, never a /
    expect(pointerKeys("/~01")).toEqual(["~1"]);
    expect(pointerKeys("")).toEqual([]);
    expect(pointerKeys("/")).toEqual([""]);
  });
});

describe("normalizeJsonText", () => {
  it("trims the grammar's trailing newlines and re-serialises compactly, exponents written out", () => {
    expect(normalizeJsonText('{"a": 1e2, "b" :[ 0e4726075075075077 ]}\n\n\n\n')).toEqual({ ok: true, text: '{"a":100,"b":[0]}', value: { a: 100, b: [0] } });
  });

  it("refuses numbers that parse to Infinity, naming where", () => {
    expect(normalizeJsonText('{"x": [1, 326607266607775e414150]}')).toEqual({ ok: false, error: "/x/1 is a number too large for JSON (it parses to Infinity)" });
    expect(normalizeJsonText("-1e999")).toMatchObject({ ok: false });
  });

  it("refuses text that is not JSON", () => {
    expect(normalizeJsonText('{"a": ')).toMatchObject({ ok: false });
    expect(normalizeJsonText("")).toMatchObject({ ok: false });
  });
});
