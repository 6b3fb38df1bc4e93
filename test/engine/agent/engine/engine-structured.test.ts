// Structured output on real llama.cpp with the tiny qwen3 model: the response_format's grammar constrains the
// random weights, so whatever they write parses as JSON and validates. Mechanics only, never what the text says.
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { Engine } from "../../../../agent/engine/engine.ts";
import type { GenerateRequest, Turn } from "../../../../agent/engine/turn.ts";
import { ModelStore } from "../../../../agent/models/store.ts";
import { ApiError } from "../../../../src/errors.ts";
import { validate } from "../../../../src/schema/validate.ts";
import type { ResponseFormat } from "../../../../src/session/sampling.ts";
import { askEngine, collect } from "../../../fixtures/engine-request.ts";
import { makeTinyCatalog } from "../../../fixtures/tiny-catalog.ts";

const tiny = makeTinyCatalog([{ alias: "qwen3-4b", seed: 1 }]);
const engine = new Engine({ store: new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir }), gpu: false, threads: 1 });
afterAll(async () => {
  await engine.dispose();
  tiny.cleanup();
});

const SCHEMA = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  properties: {
    name: { type: "string", maxLength: 8 },
    age: { type: "integer" },
    tags: { type: "array", items: { enum: ["a", "b", 3, null] }, maxItems: 2 },
    kind: { anyOf: [{ type: "boolean" }, { const: "x" }] },
  },
  required: ["name", "age"],
  additionalProperties: false,
};
const schemaFormat = (schema: Record<string, unknown> = SCHEMA): ResponseFormat => ({ type: "json_schema", json_schema: { name: "t", schema, strict: true } });
const ask = (overrides: Partial<GenerateRequest> = {}) => askEngine({ max_tokens: 200, temperature: 1, ...overrides });
const generate = (turn: Turn) => collect(engine.generate(turn));

describe("response_format on the engine", () => {
  it("a zod schema as the SDKs send it (int, email, uuid, date-time, regex, optional, nullable, nested arrays, enums): 20 seeds, every answer parsed by zod", async () => {
    const Line = z.object({ sku: z.enum(["book", "pen"]), qty: z.number().int().min(1).max(9), tags: z.array(z.enum(["gift", "rush"])).max(2) });
    const Order = z.object({
      id: z.number().int(), email: z.email(), ref: z.uuid(), placed: z.iso.datetime(), code: z.string().regex(/^[A-Z]{2}-\d{3}$/),
      note: z.string().max(10).optional(), owner: z.string().max(10).nullable(), lines: z.array(Line).max(2), price: z.number().gt(0).max(500),
    });
    const schema = z.toJSONSchema(Order);
    for (let seed = 1; seed <= 20; seed++) {
      const { text, done } = await generate(ask({ seed, max_tokens: 1500, response_format: schemaFormat(schema) }));
      expect(done.finish_reason, `seed ${seed}: ${text}`).toBe("stop");
      expect(Order.safeParse(JSON.parse(text)).error, `seed ${seed}: ${text}`).toBeUndefined();
    }
  });

  it("json_schema: at temperature 1, several seeds each give JSON that validates; the grammar's newlines are trimmed", async () => {
    let stops = 0;
    for (const seed of [1, 2, 3, 4, 5]) {
      const { text, done } = await generate(ask({ seed, response_format: schemaFormat() }));
      if (done.finish_reason !== "stop") continue; // on length the JSON may be cut
      stops++;
      const value = JSON.parse(text);
      expect(validate(value, SCHEMA), text).toEqual([]);
      expect(text).toBe(JSON.stringify(value)); // normalised: exactly what response_sha256 covers
      expect(done.completion_tokens).toBeGreaterThan(0);
    }
    expect(stops).toBeGreaterThanOrEqual(3);
  });

  it("json_object: always a JSON object", async () => {
    for (const seed of [1, 2, 3]) {
      const { text, done } = await generate(ask({ seed, max_tokens: 120, response_format: { type: "json_object" } }));
      if (done.finish_reason !== "stop") continue;
      const value = JSON.parse(text);
      expect(typeof value === "object" && value !== null && !Array.isArray(value), text).toBe(true);
    }
    // json_schema without a schema is the same
    const { text, done } = await generate(ask({ seed: 9, max_tokens: 120, response_format: { type: "json_schema", json_schema: { name: "x" } } }));
    if (done.finish_reason === "stop") expect(JSON.parse(text)).toBeTypeOf("object");
  });

  it("the same seed gives the same JSON; the grammar is compiled once per schema", async () => {
    const before = engine.grammarCompiles;
    const format = schemaFormat({ type: "object", properties: { n: { type: "integer" }, s: { type: "string", maxLength: 4 } }, additionalProperties: false });
    const a = await generate(ask({ seed: 7, response_format: format }));
    const b = await generate(ask({ seed: 7, response_format: structuredClone(format) }));
    expect(b.text).toBe(a.text);
    expect(engine.grammarCompiles - before).toBe(1);
  });

  it("finish length: the text is cut where the budget ended (no JSON promised), nothing else breaks", async () => {
    const { text, done } = await generate(ask({ seed: 1, max_tokens: 3, response_format: schemaFormat() }));
    expect(done.finish_reason).toBe("length");
    expect(done.completion_tokens).toBe(3);
    expect(text.startsWith("{")).toBe(true);
  });

  it("a request without response_format is untouched: plain text, streamed token by token", async () => {
    const { deltas, done } = await generate(ask({ seed: 1, max_tokens: 20 }));
    expect(done.finish_reason).toBe("length");
    expect(deltas.length).toBeGreaterThan(1);
  });

  it("a schema the agent cannot compile is invalid_value naming response_format", async () => {
    const error = await generate(ask({ response_format: schemaFormat({ $ref: "#/$defs/none" }) })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe("invalid_value");
    expect((error as ApiError).param).toMatch(/^response_format/);
  });
});
