// The hostile-schema corpus (test/fixtures/schema-attacks.ts) against both places a caller's schema is worked on:
// the gateway's request parser and the agent's grammar planning. Each gets its 400 (code, param, the limit named)
// from the bounds in src/schema/bounds.ts; none may run long, and a unit test's own time limit would catch one.
import { readFileSync } from "node:fs";
import type { Llama } from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { planTurn, type GenerateRequest } from "../../../../agent/engine/turn.ts";
import { ApiError } from "../../../../src/errors.ts";
import { SchemaBudget, SCHEMA_LIMITS } from "../../../../src/schema/bounds.ts";
import { prepareSchema } from "../../../../src/schema/prepare.ts";
import { SCHEMA_PARAM, schemaParam } from "../../../../src/schema/schema-fault.ts";
import { catchApiError } from "../../../fixtures/api-error.ts";
import { parse } from "../../../fixtures/chat-request.ts";
import { SCHEMA_ATTACKS } from "../../../fixtures/schema-attacks.ts";

const messages = [{ role: "user" as const, content: "hi" }];
const TOOL = "tools[0].function.parameters";
const responseFormat = (schema: unknown) => ({ type: "json_schema" as const, json_schema: { name: "answer", schema: schema as Record<string, unknown> } });
const tools = (schema: unknown) => [{ type: "function" as const, function: { name: "f", parameters: schema as Record<string, unknown> } }];

/** The agent's side: planning the turn, or its grammar build, refuses before node-llama-cpp is ever asked (so no model is needed). */
async function agentFault(request: Partial<GenerateRequest>): Promise<ApiError> {
  const build = async () => planTurn({ model: "qwen3-4b", messages, max_tokens: 16, temperature: 0.7, ...request } as GenerateRequest).grammar!.build({} as Llama);
  const error = await build().then(() => undefined, (err: unknown) => err);
  if (error instanceof ApiError) return error;
  throw new Error(`expected an ApiError, got ${String(error)}`);
}

const summary = (error: ApiError) => ({ status: error.status, code: error.code, param: error.param });

describe("Schema limits (DESIGN §8): the attack corpus", () => {
  for (const attack of SCHEMA_ATTACKS) {
    const expected = (base: string) => ({ status: 400, code: attack.code, param: schemaParam(attack.pointer, base) });

    it(`${attack.name}: the gateway answers 400 ${attack.code} naming ${attack.pointer || "the schema"}`, () => {
      const asFormat = catchApiError(() => parse({ model: "qwen3-4b", messages, response_format: responseFormat(attack.schema) }));
      expect(summary(asFormat)).toEqual(expected(SCHEMA_PARAM));
      expect(asFormat.message).toContain(attack.says);
      const asTool = catchApiError(() => parse({ model: "qwen3-4b", messages, tools: tools(attack.schema) }));
      expect(summary(asTool)).toEqual(expected(TOOL));
    });

    it(`${attack.name}: the agent refuses it the same way before it builds a grammar`, async () => {
      expect(summary(await agentFault({ response_format: responseFormat(attack.schema) }))).toEqual(expected(SCHEMA_PARAM));
      expect(summary(await agentFault({ tools: tools(attack.schema), tool_choice: "required" }))).toEqual(expected(TOOL));
    });
  }
});

describe("Schema limits (DESIGN §8): one budget per request", () => {
  it("the budget is shared: schemas that pass alone are refused together once their steps add up", () => {
    const schema = { type: "string", enum: Array.from({ length: 1000 }, (_, i) => `m${i}`), minLength: 1, maxLength: 9 };
    const budget = new SchemaBudget();
    let prepared = 0;
    const error = catchApiError(() => {
      for (;;) {
        try {
          prepareSchema(schema, budget);
        } catch (err) {
          throw new ApiError("schema_too_complex", (err as Error).message);
        }
        prepared++;
      }
    });
    expect(error.code).toBe("schema_too_complex");
    expect(prepared).toBeGreaterThan(0);
    const many = Array.from({ length: prepared + 1 }, () => ({ type: "function", function: { name: "f", parameters: schema } }));
    expect(summary(catchApiError(() => parse({ model: "qwen3-4b", messages, tools: many })))).toMatchObject({ status: 400, code: "schema_too_complex" });
  });

  it("docs/api.md lists every limit with its value", () => {
    const doc = readFileSync(new URL("../../../../docs/api.md", import.meta.url), "utf8");
    for (const [name, value] of Object.entries(SCHEMA_LIMITS)) {
      if (name === "schema_steps") expect(doc).toContain(`one step budget of ${value.toLocaleString("en-US")} steps`);
      else expect(doc).toContain(`| \`${name}\` | ${value.toLocaleString("en-US")} |`);
    }
  });

  it("schemas at the limits are served: a 1,000-member enum, 64 levels of nesting, 128 tools, a pattern RE2 matches", () => {
    const enumAtLimit = { type: "string", enum: Array.from({ length: SCHEMA_LIMITS.enum_members }, (_, i) => `m${i}`) };
    expect(parse({ model: "qwen3-4b", messages, response_format: responseFormat(enumAtLimit) }).body.response_format).toBeDefined();
    let deep: Record<string, unknown> = { type: "integer" };
    for (let i = 0; i < SCHEMA_LIMITS.schema_depth - 1; i++) deep = { type: "array", items: deep };
    expect(parse({ model: "qwen3-4b", messages, response_format: responseFormat(deep) }).body.response_format).toBeDefined();
    // 128 tools (the most a request may carry) of a realistic size share the one budget
    const parameters = {
      type: "object",
      properties: {
        city: { type: "string", description: "the city", pattern: "^[A-Z][a-z]+$" },
        unit: { enum: ["c", "f"] },
        days: { type: "integer", minimum: 1, maximum: 14 },
        when: { type: "string", format: "date" },
        tags: { type: "array", items: { type: "string", maxLength: 20 }, maxItems: 5 },
      },
      required: ["city", "unit"],
      additionalProperties: false,
    };
    const many = Array.from({ length: 128 }, (_, i) => ({ type: "function", function: { name: `f${i}`, parameters } }));
    expect(parse({ model: "qwen3-4b", messages, tools: many }).body.tools).toHaveLength(128);
    const filtered = { type: "string", enum: ["ab1", "x", "ab22"], pattern: "^(?<p>ab)\\d+$" };
    expect(prepareSchema(filtered).schema).toEqual({ enum: ["ab1", "ab22"] });
  });
});
