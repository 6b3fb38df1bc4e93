// JSON-schema keywords against node-llama-cpp's grammar (src/schema/prepare.ts): the evidence table. For every
// ENFORCED or REWRITTEN keyword, the real grammar of the normalised schema, sampled from the tiny random model at
// temperature 1 with several seeds, yields JSON that passes validate() against the ORIGINAL schema; every
// UNSUPPORTED keyword is what strictRefusal() names, at its path; annotations change nothing.
import { z } from "zod";
import { LlamaGrammarEvaluationState, type LlamaGrammar, type Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { classifyKeywords, normalize, prepareSchema, SchemaError, strictRefusal } from "../../../../src/schema/prepare.ts";
import { validate } from "../../../../src/schema/validate.ts";
import { JSON_GRAMMAR_END, jsonSchemaGbnf } from "../../../../agent/engine/grammar/json-grammar.ts";
import { normalizeJsonText } from "../../../../agent/engine/grammar/json-text.ts";
import { generate, loadTinyLlama, userPrompt, type TinyLlama } from "../../../fixtures/tiny-llama.ts";

const SEEDS = [1, 2, 3];
const s = (maxLength = 8) => ({ type: "string", maxLength });

/** [keyword, path of the keyword, expected kind, schema] */
type Row = [string, string, "enforced" | "rewritten", object];
const GENERATED: Row[] = [
  ["type", "/type", "enforced", { type: "string", maxLength: 12 }],
  ["type", "/properties/n/type", "enforced", { type: "object", properties: { n: { type: "number" }, i: { type: "integer" }, b: { type: "boolean" }, z: { type: "null" } } }],
  ["type", "/type", "enforced", { type: ["integer", "null"] }],
  ["type", "/type", "rewritten", { type: ["object", "null"], properties: { a: { type: "integer" } } }],
  ["type", "/type", "rewritten", { type: ["string", "null"], minLength: 2, maxLength: 4 }],
  ["type", "/type", "rewritten", { type: ["array", "string"], items: { type: "boolean" }, maxItems: 3, maxLength: 3 }],
  ["type", "/properties/a/type", "rewritten", { type: "object", properties: { a: { properties: { x: { type: "integer" } } } } }],
  ["type", "/type", "rewritten", { maxLength: 3 }],
  ["type", "/type", "rewritten", { description: "no type at all: any JSON" }],
  ["true", "/properties/any", "rewritten", { type: "object", properties: { any: true } }],
  ["properties", "/properties", "enforced", { type: "object", properties: { a: s(), b: { type: "integer" } } }],
  ["required", "/required", "enforced", { type: "object", properties: { a: s(), b: { type: "boolean" } }, required: ["a"] }],
  ["required", "/required", "enforced", { type: "object", properties: { a: s() }, required: ["a", "b"], additionalProperties: { type: "integer" } }],
  ["additionalProperties", "/additionalProperties", "enforced", { type: "object", properties: { a: { type: "boolean" } }, additionalProperties: false }],
  ["additionalProperties", "/additionalProperties", "enforced", { type: "object", additionalProperties: { type: "integer" }, maxProperties: 3 }],
  ["additionalProperties", "/additionalProperties", "enforced", { type: "object", properties: { a: { type: "null" } }, additionalProperties: true, maxProperties: 2 }],
  ["minProperties", "/minProperties", "enforced", { type: "object", additionalProperties: { type: "boolean" }, minProperties: 2, maxProperties: 3 }],
  ["maxProperties", "/maxProperties", "rewritten", { type: "object", properties: { a: { type: "null" }, b: { type: "null" }, c: { type: "null" } }, required: ["c"], maxProperties: 1 }],
  ["enum", "/enum", "enforced", { enum: ["red", "green", 1, null, true] }],
  ["enum", "/enum", "rewritten", { type: "string", maxLength: 3, enum: ["red", 7, "green", null, "ok"] }],
  ["const", "/const", "enforced", { const: "fixed" }],
  ["oneOf", "/oneOf", "enforced", { oneOf: [{ type: "boolean" }, { type: "object", properties: { a: { type: "integer" } } }] }],
  ["anyOf", "/anyOf", "rewritten", { anyOf: [{ type: "integer" }, { type: "null" }] }],
  ["anyOf", "/anyOf", "rewritten", { type: "object", properties: { a: { type: "boolean" } }, anyOf: [{ required: ["a"] }, { required: ["b"] }] }],
  ["allOf", "/allOf", "rewritten", { allOf: [{ $ref: "#/$defs/p" }], description: "Pydantic v1 style", $defs: { p: { type: "integer" } } }],
  ["allOf", "/allOf", "rewritten", { allOf: [{ type: "object", properties: { a: { type: "integer" } } }, { required: ["a"] }] }],
  ["$ref", "/properties/p/$ref", "enforced", { type: "object", properties: { p: { $ref: "#/$defs/pt" } }, $defs: { pt: { type: "object", properties: { x: { type: "integer" } } } } }],
  ["$ref", "/properties/p/$ref", "rewritten", { type: "object", properties: { p: { $ref: "#/definitions/pt" } }, definitions: { pt: { type: "integer" } } }],
  ["$ref", "/properties/b/$ref", "rewritten", { type: "object", properties: { a: { enum: ["x", "y"] }, b: { $ref: "#/properties/a" } } }],
  ["$ref", "/properties/kids/items/$ref", "rewritten", { type: "object", properties: { v: { type: "integer" }, kids: { type: "array", items: { $ref: "#" }, maxItems: 2 } } }],
  ["items", "/items", "enforced", { type: "array", items: { type: "integer" }, maxItems: 4 }],
  ["items", "/items", "rewritten", { type: "array", prefixItems: [{ type: "boolean" }, { type: "null" }], items: false }],
  ["items", "/items", "rewritten", { type: "array", items: [{ type: "integer" }, s(3)], additionalItems: { type: "boolean" }, maxItems: 4 }],
  ["prefixItems", "/prefixItems", "enforced", { type: "array", prefixItems: [s(4), { type: "boolean" }], items: { type: "integer" }, maxItems: 4 }],
  ["minItems", "/minItems", "enforced", { type: "array", items: { type: "boolean" }, minItems: 2, maxItems: 3 }],
  ["minLength", "/minLength", "enforced", { type: "string", minLength: 3, maxLength: 5 }],
  ["format", "/format", "enforced", { type: "string", format: "date" }],
  ["format", "/format", "enforced", { type: "string", format: "time" }],
  ["format", "/format", "enforced", { type: "string", format: "date-time" }],
  ["format", "/format", "enforced", { type: "string", format: "duration" }],
  ["format", "/format", "enforced", { type: "string", format: "email" }],
  ["format", "/format", "enforced", { type: "string", format: "hostname" }],
  ["format", "/format", "enforced", { type: "string", format: "ipv4" }],
  ["format", "/format", "enforced", { type: "string", format: "ipv6" }],
  ["format", "/format", "enforced", { type: "string", format: "uuid" }],
  ["pattern", "/pattern", "enforced", z.toJSONSchema(z.uuid())],
  ["pattern", "/pattern", "enforced", z.toJSONSchema(z.hostname())],
  ["maxLength", "/maxLength", "enforced", z.toJSONSchema(z.email().max(255))],
  ["propertyNames", "/propertyNames", "enforced", { ...z.toJSONSchema(z.record(z.string(), z.boolean())), maxProperties: 3 }],
  ["propertyNames", "/propertyNames", "rewritten", z.toJSONSchema(z.record(z.enum(["a", "b"]), z.int().min(0).max(9)))],
  ["propertyNames", "/properties/r/propertyNames", "rewritten", z.toJSONSchema(z.object({ r: z.partialRecord(z.enum(["x", "y"]), z.boolean()) }))],
  ["pattern", "/pattern", "enforced", z.toJSONSchema(z.nanoid())],
  ["pattern", "/pattern", "enforced", z.toJSONSchema(z.ulid())],
  ["pattern", "/pattern", "enforced", z.toJSONSchema(z.e164())],
  ["pattern", "/pattern", "enforced", z.toJSONSchema(z.string().startsWith("ab"))],
  ["pattern", "/properties/code/pattern", "enforced", { type: "object", properties: { code: { type: "string", pattern: "^[a-z]{2,6}$" } } }],
  ["pattern", "/pattern", "enforced", { type: "string", pattern: "^(?:[01]\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d(?:\\.\\d+)?)?$" }],
  ["pattern", "/pattern", "enforced", { type: "string", pattern: "(?i)^sv[c-e]-\\d{3}$" }],
  ["pattern", "/pattern", "enforced", { type: "string", pattern: "^[\"\\\\\\n\\t]{1,3}\\.?$" }],
  ["pattern", "/pattern", "enforced", { type: "string", pattern: "^\\p{Lu}\\p{Ll}{1,4}$" }],
  ["pattern", "/pattern", "enforced", { type: "string", pattern: "x+|y?z" }],
  ["pattern", "/pattern", "enforced", { type: "string", pattern: "^.{3}$" }],
  ["minimum", "/minimum", "enforced", { type: "integer", minimum: 10, maximum: 20 }],
  ["minimum", "/minimum", "enforced", z.toJSONSchema(z.number().int())],
  ["maximum", "/items/maximum", "enforced", { type: "array", items: { type: "number", maximum: 1 }, maxItems: 4 }],
  ["exclusiveMinimum", "/exclusiveMinimum", "enforced", { type: "number", exclusiveMinimum: -2.5, exclusiveMaximum: 0.5 }],
  ["exclusiveMaximum", "/exclusiveMaximum", "enforced", { type: ["integer", "null"], exclusiveMaximum: -7 }],
];

const UNSUPPORTED: [string, string, object][] = [
  ["pattern", "/pattern", { type: "string", pattern: "\\bfoo" }],
  ["pattern", "/pattern", { type: "string", format: "email", pattern: "@example\\.org$" }],
  ["minimum", "/minimum", { type: "number", minimum: 0.1, maximum: 0.2 }],
  ["multipleOf", "/multipleOf", { type: "integer", multipleOf: 5 }],
  ["format", "/format", { type: "string", format: "uri" }],
  ["allOf", "/allOf", { allOf: [{ type: "object", properties: { a: { type: "integer" } } }, { type: "object", properties: { b: { type: "integer" } } }] }],
  ["not", "/not", { type: "integer", not: { const: 3 } }],
  ["if", "/if", { type: "object", properties: { a: { type: "integer" } }, if: { required: ["a"] }, then: { required: ["b"] } }],
  ["patternProperties", "/patternProperties", { type: "object", patternProperties: { "^x": { type: "integer" } } }],
  ["propertyNames", "/propertyNames", { type: "object", additionalProperties: true, propertyNames: { maxLength: 3 } }],
  ["uniqueItems", "/uniqueItems", { type: "array", items: { type: "integer" }, uniqueItems: true }],
  ["contains", "/contains", { type: "array", contains: { const: 1 } }],
  ["dependentRequired", "/dependentRequired", { type: "object", dependentRequired: { a: ["b"] } }],
  ["const", "/const", { const: { a: 1 } }],
  ["enum", "/enum", { enum: [[1], { a: 2 }] }],
  ["$ref", "/$ref", { $ref: "https://example.com/schema.json" }],
  ["maxLength", "/properties/a/maxLength", { type: "object", properties: { a: { $ref: "#/$defs/s", maxLength: 2 } }, $defs: { s: { type: "string" } } }],
  ["false", "/items/0", { type: "array", items: [false] }],
];

describe("JSON-schema keywords: the evidence table", () => {
  let tiny: TinyLlama;
  let prompt: Token[];
  beforeAll(async () => {
    tiny = await loadTinyLlama();
    prompt = userPrompt(tiny.model, "JSON please.");
  });
  afterAll(async () => tiny?.dispose());

  const grammarFor = async (schema: unknown) => tiny.llama.createGrammar({ grammar: await jsonSchemaGbnf(tiny.llama, schema) });
  async function sample(grammar: LlamaGrammar, seed: number) {
    const grammarEvaluationState = new LlamaGrammarEvaluationState({ model: tiny.model, grammar }); // single-use
    return generate(tiny, prompt, { temperature: 1, seed, grammarEvaluationState }, { maxTokens: 600, until: (t) => t.endsWith(JSON_GRAMMAR_END) });
  }

  it.each(GENERATED)("%s at %s is %s: generated JSON validates against the original schema", async (keyword, path, kind, schema) => {
    expect(classifyKeywords(schema)).toContainEqual(expect.objectContaining({ keyword, path, kind }));
    expect(strictRefusal(schema)).toBeUndefined();
    const grammar = await grammarFor(schema);
    for (const seed of SEEDS) {
      const out = await sample(grammar, seed);
      const json = normalizeJsonText(out.text);
      expect(json, `seed ${seed}: ${JSON.stringify(out.text)}`).toMatchObject({ ok: true });
      if (!json.ok) continue;
      expect(validate(json.value, schema), `seed ${seed}: ${json.text}`).toEqual([]);
    }
  });

  it("a zod schema as the SDKs send it (int, email, uuid, date-time, regex, optional, nullable, nested arrays, enums): 20 seeds, each parsed by zod", async () => {
    const Item = z.object({ kind: z.enum(["book", "pen"]), counts: z.array(z.number().int().min(0).max(99)).max(3) });
    const Order = z.object({
      id: z.number().int(), email: z.email(), ref: z.uuid(), at: z.iso.datetime(), day: z.iso.date(), span: z.iso.duration(),
      host: z.hostname(), v4: z.ipv4(), v6: z.ipv6(), clock: z.iso.time(), code: z.string().regex(/^[A-Z]{2}-\d{2,4}(\.[a-z]+)?$/), price: z.number().min(0.5).max(1000), note: z.string().max(12).optional(),
      owner: z.string().max(12).nullable(), items: z.array(Item).max(2), tiers: z.array(z.array(z.enum(["a", "b"])).max(2)).max(2),
    });
    const schema = z.toJSONSchema(Order);
    expect(strictRefusal(schema)).toBeUndefined();
    const grammar = await grammarFor(schema);
    for (let seed = 1; seed <= 20; seed++) {
      const grammarEvaluationState = new LlamaGrammarEvaluationState({ model: tiny.model, grammar });
      const out = await generate(tiny, prompt, { temperature: 1, seed, grammarEvaluationState }, { maxTokens: 2000, until: (t) => t.endsWith(JSON_GRAMMAR_END) });
      const json = normalizeJsonText(out.text);
      expect(json, `seed ${seed}: ${JSON.stringify(out.text)}`).toMatchObject({ ok: true });
      if (!json.ok) continue;
      expect(Order.safeParse(json.value).error, `seed ${seed}: ${json.text}`).toBeUndefined();
      expect(validate(json.value, schema), `seed ${seed}: ${json.text}`).toEqual([]);
    }
  });

  it.each(UNSUPPORTED)("%s at %s is UNSUPPORTED: strict mode refuses it there", (keyword, path, schema) => {
    expect(strictRefusal(schema)).toMatchObject({ keyword, path, kind: "unsupported" });
  });

  it("an unsupported keyword is dropped, and validate() catches what the grammar let through", async () => {
    const schema = { type: "integer", multipleOf: 1000 };
    expect(normalize(schema)).toEqual({ type: "integer" });
    const grammar = await grammarFor(schema);
    const values = [];
    for (const seed of SEEDS) {
      const json = normalizeJsonText((await sample(grammar, seed)).text);
      if (json.ok) values.push(json.value);
    }
    // random weights: a match is possible but the three seeds give none
    expect(values.filter((v) => validate(v, schema).length > 0)).toHaveLength(values.length);
    expect(validate(1001, schema)).toEqual([{ path: "", message: "is not a multiple of 1000" }]);
  });

  it("number rules allow no exponent on integers and at most two digits on other numbers (gotcha 7: 5e47772 is Infinity)", async () => {
    const gbnf = await jsonSchemaGbnf(tiny.llama, { type: "object", properties: { i: { type: "integer" }, n: { type: "number" } } });
    expect(gbnf).toMatch(/^integer-number-rule ::= "-"\? \("0" \| \[1-9\] \[0-9\]\{0,15\}\)\s*$/m);
    expect(gbnf).toMatch(/^fractional-number-rule ::= .* \(\[eE\] \[-\+\]\? \[0-9\]\{1,2\}\)\?\s*$/m);
    expect(gbnf.split("\n")[0]).toMatch(/ "\\n\\n\\n\\n" \[\\n\]\*\s*$/); // the terminator stays for response_format
    expect(await jsonSchemaGbnf(tiny.llama, { type: "integer" }, { terminator: false })).toMatch(/^root ::= integer-number-rule\s*$/m);
  });

  it("annotations change nothing: same normalised schema, same grammar", async () => {
    const plain = { type: "object", properties: { a: { type: "integer" }, b: { enum: ["x", "y"] } }, required: ["a"] };
    const annotated = {
      $schema: "https://json-schema.org/draft/2020-12/schema", $id: "urn:x", $comment: "c", title: "T", description: "D",
      type: "object", default: { a: 1 }, examples: [{ a: 2 }], "x-vendor": true, deprecated: false,
      properties: { a: { type: "integer", title: "A", default: 1, examples: [1, 2], readOnly: true }, b: { enum: ["x", "y"], description: "b" } },
      required: ["a"],
    };
    expect(normalize(annotated)).toEqual(normalize(plain));
    expect(await jsonSchemaGbnf(tiny.llama, annotated)).toBe(await jsonSchemaGbnf(tiny.llama, plain));
    const kinds = new Map(classifyKeywords(annotated).map((u) => [`${u.path}`, u.kind]));
    for (const path of ["/$schema", "/$id", "/$comment", "/title", "/description", "/default", "/examples", "/x-vendor", "/properties/a/readOnly", "/properties/b/description"]) {
      expect(kinds.get(path), path).toBe("annotation");
    }
    expect(strictRefusal(annotated)).toBeUndefined();
  });
});

describe("normalize (no model)", () => {
  it("rewrites what the library gets wrong into shapes it handles", () => {
    expect(normalize({ anyOf: [{ type: "string" }, { type: "null" }] })).toEqual({ oneOf: [{ type: "string" }, { type: "null" }] });
    expect(normalize({ type: ["object", "null"] })).toEqual({ oneOf: [{ type: "object" }, { type: "null" }] });
    expect(normalize({ type: "integer", enum: [1, "a", 2.5, 3] })).toEqual({ enum: [1, 3] });
    expect(normalize({ type: "array", prefixItems: [{ type: "null" }], items: false, maxItems: 5 })).toEqual({ type: "array", prefixItems: [{ type: "null" }], maxItems: 1 });
    expect(normalize({ type: "string", format: "uri", pattern: "\\bx" })).toEqual({ type: "string" });
    expect(normalize({ properties: { a: false, b: { type: "null" } } })).toEqual({ type: "object", properties: { b: { type: "null" } } });
    const names = { type: "object", propertyNames: { enum: ["a", "b"] }, properties: { a: { type: "null" }, z: { type: "null" } }, additionalProperties: { type: "boolean" } };
    expect(normalize(names)).toEqual({ type: "object", additionalProperties: false, properties: { a: { type: "null" }, b: { type: "boolean" } } });
  });

  it("turns every local reference into a root $defs entry, recursion included", () => {
    expect(normalize({ type: "object", properties: { p: { $ref: "#/definitions/pt" } }, definitions: { pt: { type: "integer" } } })).toEqual({
      type: "object", properties: { p: { $ref: "#/$defs/d0" } }, $defs: { d0: { type: "integer" } },
    });
    const tree = normalize({ type: "array", items: { $ref: "#" } });
    expect(tree).toEqual({ type: "array", items: { $ref: "#/$defs/d0" }, $defs: { d0: { type: "array", items: { $ref: "#/$defs/d0" } } } });
  });

  it("refuses schemas it cannot read, naming the path", () => {
    expect(() => normalize({ type: "object", properties: { a: { $ref: "#/$defs/missing" } } })).toThrow(SchemaError);
    expect(() => normalize({ type: "object", properties: { a: { $ref: "#/$defs/missing" } } })).toThrow("/properties/a/$ref");
    expect(() => normalize({ type: "strin" })).toThrow("/type");
    expect(() => normalize({ properties: { a: 3 } })).toThrow("/properties/a");
    expect(() => normalize({ type: "string", enum: [1, 2] })).toThrow("/enum");
  });

  it("lists keywords inside definitions nobody references", () => {
    const uses = prepareSchema({ type: "null", $defs: { unused: { type: "integer", multipleOf: 2 } } }).uses;
    expect(uses).toContainEqual({ keyword: "multipleOf", path: "/$defs/unused/multipleOf", kind: "unsupported" });
  });
});
