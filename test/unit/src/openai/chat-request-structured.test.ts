// OpenAI structured output at the gateway: `response_format` parsed into what is sealed, strict mode refusing a
// keyword the grammar cannot enforce with the keyword's path, bad shapes and uncompilable schemas as 400s.
import { z } from "zod";
import { describe, expect, it } from "vitest";
import { SCHEMA_PARAM, schemaParam } from "../../../../src/schema/schema-fault.ts";
import { canonicalJson } from "../../../../src/receipt/canonical-json.ts";
import { catchApiError } from "../../../fixtures/api-error.ts";
import { parse, plaintextWith, sealedControls } from "../../../fixtures/chat-request.ts";
import { parseSessionPlaintext } from "../../../../src/session/sealed-request.ts";

const base = { model: "qwen3-4b", messages: [{ role: "user", content: "hi" }] };
const sampling = (extra: Record<string, unknown>) => sealedControls({ ...base, ...extra });
const fault = (extra: Record<string, unknown>) => {
  const error = catchApiError(() => parse({ ...base, ...extra }));
  return [error.status, error.code, error.param];
};
const jsonSchema = (schema: unknown, more: Record<string, unknown> = {}) => ({
  response_format: { type: "json_schema", json_schema: { name: "answer", schema, ...more } },
});

const CONTACT = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  title: "Contact",
  description: "who to write to",
  type: "object",
  properties: {
    name: { type: "string", description: "full name", examples: ["Ada"], default: "" },
    email: { type: "string", format: "email" },
    site: { type: "string", format: "uri" },
  },
  required: ["name", "email", "site"],
  additionalProperties: false,
};

describe("response_format", () => {
  it("text, null or absent seal nothing: the plaintext of a plain request is unchanged", () => {
    expect(sampling({})).toEqual({});
    expect(sampling({ response_format: null })).toEqual({});
    expect(sampling({ response_format: { type: "text" } })).toEqual({});
  });

  it("json_object is sealed as {type: json_object}", () => {
    expect(sampling({ response_format: { type: "json_object" } })).toEqual({ response_format: { type: "json_object" } });
  });

  it("json_schema is sealed with its name, schema and strict as sent (description dropped), so request_sha256 covers it", () => {
    const schema = { type: "object", properties: { a: { type: "integer" } }, required: ["a"], additionalProperties: false };
    const sealed = sampling(jsonSchema(schema, { strict: true, description: "an answer" }));
    expect(sealed).toEqual({ response_format: { type: "json_schema", json_schema: { name: "answer", schema, strict: true } } });
    expect(() => canonicalJson(sealed)).not.toThrow();
    expect(sampling(jsonSchema(schema))).toEqual({ response_format: { type: "json_schema", json_schema: { name: "answer", schema } } });
    // no schema: any JSON object, as json_object
    expect(sampling({ response_format: { type: "json_schema", json_schema: { name: "x" } } })).toEqual({
      response_format: { type: "json_schema", json_schema: { name: "x" } },
    });
  });

  it("strict: a keyword the grammar does not enforce is 400 invalid_value naming the keyword's path", () => {
    expect(fault(jsonSchema(CONTACT, { strict: true }))).toEqual([400, "invalid_value", "response_format.json_schema.schema.properties.site.format"]);
    const pattern = { type: "object", properties: { tags: { type: "array", items: { type: "string", pattern: "\\bfoo" } } } };
    expect(fault(jsonSchema(pattern, { strict: true }))).toEqual([400, "invalid_value", "response_format.json_schema.schema.properties.tags.items.pattern"]);
    const bounds = { anyOf: [{ type: "number", minimum: 0.1, maximum: 0.2 }, { type: "null" }] };
    expect(fault(jsonSchema(bounds, { strict: true }))).toEqual([400, "invalid_value", "response_format.json_schema.schema.anyOf[0].minimum"]);
  });

  it("strict: numeric bounds and OpenAI's formats are enforced, so zod's .int(), .email(), .uuid() and .datetime() pass", () => {
    const zod = z.toJSONSchema(z.object({ n: z.number().int(), age: z.number().int().min(0).max(150), e: z.email(), u: z.uuid(), at: z.iso.datetime(), x: z.number().gt(0) }));
    expect(sampling(jsonSchema(zod, { strict: true })).response_format).toMatchObject({ json_schema: { strict: true, schema: zod } });
    const { site: _, ...properties } = CONTACT.properties;
    expect(sampling(jsonSchema({ ...CONTACT, properties, required: ["name", "email"] }, { strict: true })).response_format).toMatchObject({ type: "json_schema" });
  });

  it("without strict the same schemas pass (svc enforces what the grammar can; docs/api.md lists the rest)", () => {
    expect(sampling(jsonSchema(CONTACT)).response_format).toMatchObject({ type: "json_schema" });
    expect(sampling(jsonSchema(CONTACT, { strict: false })).response_format).toMatchObject({ json_schema: { strict: false } });
  });

  it("annotations ($schema, title, description, default, examples) are accepted in strict mode too", () => {
    const { name } = CONTACT.properties;
    const zod = { ...CONTACT, properties: { name }, required: ["name"] };
    expect(sampling(jsonSchema(zod, { strict: true })).response_format).toMatchObject({ json_schema: { strict: true } });
  });

  it("a schema that cannot be compiled is 400 invalid_value naming where", () => {
    expect(fault(jsonSchema({ type: "object", properties: { a: { $ref: "#/$defs/missing" } } }))).toEqual([
      400, "invalid_value", "response_format.json_schema.schema.properties.a.$ref",
    ]);
    expect(fault(jsonSchema({ type: "thing" }))).toEqual([400, "invalid_value", "response_format.json_schema.schema.type"]);
    expect(fault(jsonSchema({ type: "object", properties: { a: 5 } }))).toEqual([400, "invalid_value", "response_format.json_schema.schema.properties.a"]);
    let deep: Record<string, unknown> = { type: "integer" };
    for (let i = 0; i < 10_000; i++) deep = { type: "array", items: deep };
    // the depth limit names where it was passed (docs/api.md, "Schema limits")
    expect(fault(jsonSchema(deep))).toEqual([400, "invalid_value", `response_format.json_schema.schema${".items".repeat(64)}`]);
    // a lone surrogate cannot be sealed (no UTF-8 encodes it): refused here, not a 500 at sealing
    expect(fault(jsonSchema({ type: "string", description: "\ud800" }))).toEqual([400, "invalid_value", "response_format.json_schema.schema"]);
    expect(fault(jsonSchema({ type: "object", properties: { "\udc00": { type: "integer" } } }))).toEqual([400, "invalid_value", "response_format.json_schema.schema"]);
  });

  it("bad shapes are 400s naming the field", () => {
    expect(fault({ response_format: "json_object" })).toMatchObject([400, "invalid_type", "response_format"]);
    expect(fault({ response_format: { type: "xml" } })[0]).toBe(400);
    expect(fault({ response_format: { type: "xml" } })[2]).toMatch(/^response_format/);
    expect(fault({ response_format: { type: "json_schema" } })).toEqual([400, "missing_field", "response_format.json_schema"]);
    expect(fault({ response_format: { type: "json_schema", json_schema: { schema: {} } } })).toEqual([400, "missing_field", "response_format.json_schema.name"]);
    expect(fault({ response_format: { type: "json_schema", json_schema: { name: "a b" } } })).toEqual([400, "invalid_value", "response_format.json_schema.name"]);
    expect(fault({ response_format: { type: "json_schema", json_schema: { name: "a", schema: [] } } })).toEqual([400, "invalid_type", "response_format.json_schema.schema"]);
    expect(fault({ response_format: { type: "json_schema", json_schema: { name: "a", strict: "yes" } } })).toEqual([400, "invalid_type", "response_format.json_schema.strict"]);
  });

  it("stop cannot be combined with a JSON format (it could cut the JSON while finish_reason says stop), at either end", () => {
    expect(fault({ response_format: { type: "json_object" }, stop: "}" })).toEqual([400, "unsupported_parameter", "stop"]);
    expect(sampling({ response_format: { type: "text" }, stop: "}" })).toEqual({ stop: ["}"] });
    // the agent reads the sealed request by the same rule, and refuses it with the gateway's very error
    const gateway = catchApiError(() => parse({ ...base, response_format: { type: "json_object" }, stop: "}" }));
    const agent = catchApiError(() => parseSessionPlaintext(plaintextWith({ response_format: { type: "json_object" }, stop: ["}"] })));
    expect(agent.toEnvelope()).toEqual(gateway.toEnvelope());
    expect(parseSessionPlaintext(plaintextWith({ stop: ["}"] })).stop).toEqual(["}"]);
  });

  it("schema paths: JSON pointers become request field paths", () => {
    expect(schemaParam("", SCHEMA_PARAM)).toBe("response_format.json_schema.schema");
    expect(schemaParam("/properties/a~1b/items/0/format", SCHEMA_PARAM)).toBe("response_format.json_schema.schema.properties.a/b.items[0].format");
  });
});
