// The work llama.cpp's grammar will do for a schema (src/schema/grammar-work.ts), counted at the gateway and on the
// agent before any grammar is built: the leading paths its build walks and the stacks each token is checked against,
// through response_format and through tools, and the honest shapes that must still pass.
import type { Llama } from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { planTurn, type GenerateRequest } from "../../../../agent/engine/turn.ts";
import { ApiError } from "../../../../src/errors.ts";
import { SchemaBudget, SchemaError, SCHEMA_LIMITS } from "../../../../src/schema/bounds.ts";
import { MAX_LEADING_PATHS } from "../../../../src/schema/grammar-work.ts";
import { prepareSchema } from "../../../../src/schema/prepare.ts";
import { catchApiError } from "../../../fixtures/api-error.ts";
import { parse } from "../../../fixtures/chat-request.ts";
import { ambiguousNesting, branchingChain } from "../../../fixtures/schema-attacks.ts";

const messages = [{ role: "user" as const, content: "hi" }];
const responseFormat = (schema: unknown) => ({ type: "json_schema" as const, json_schema: { name: "answer", schema: schema as Record<string, unknown> } });
const tools = (schema: unknown) => [{ type: "function" as const, function: { name: "f", parameters: schema as Record<string, unknown> } }];

/** The SchemaError preparing `schema` ends in, or undefined when it is served. */
function refusal(schema: unknown): SchemaError | undefined {
  try {
    prepareSchema(schema);
    return undefined;
  } catch (err) {
    if (err instanceof SchemaError) return err;
    throw err;
  }
}

/** node-llama-cpp's grammar generator as far as the agent's build needs it: the count comes before it is asked. */
const GENERATOR = { createGrammarForJsonSchema: async () => ({ grammar: 'root ::= "{}" "\\n\\n\\n\\n" [\\n]*' }) } as unknown as Llama;

/** The agent's side: its grammar build for the turn (no model needed), or the 400 it ends in. */
async function agentBuild(request: Partial<GenerateRequest>): Promise<ApiError | undefined> {
  const turn = planTurn({ model: "qwen3-4b", messages, max_tokens: 16, temperature: 0.7, ...request } as GenerateRequest);
  return turn.grammar!.build(GENERATOR).then(
    () => undefined,
    (err: unknown) => {
      if (err instanceof ApiError) return err;
      throw err;
    },
  );
}

describe("Grammar work (issue 41): a $defs chain of oneOf/anyOf of two $refs", () => {
  it("its build walks twice the paths with each level, and its stacks stay one (llama.cpp merges branches naming one rule)", () => {
    let before = 0;
    for (const depth of [10, 12, 14, 16, 17]) {
      const { work } = prepareSchema(branchingChain(depth));
      expect(work.stacks).toBe(1);
      if (before > 0) expect(work.paths / before).toBeGreaterThan(2 ** (depth - 12) * 0.9);
      before ||= work.paths;
    }
  });

  for (const keyword of ["oneOf", "anyOf"] as const) {
    it(`${keyword}: served up to depth 17, then 400 schema_too_complex naming the level where the paths pass the budget, up to depth 30`, () => {
      for (let depth = 10; depth <= 17; depth++) expect(refusal(branchingChain(depth, keyword)), `depth ${depth}`).toBeUndefined();
      for (let depth = 18; depth <= 30; depth++) {
        const error = refusal(branchingChain(depth, keyword));
        expect([error?.code, error?.path], `depth ${depth}`).toEqual(["schema_too_complex", "/$defs/l18"]);
        expect(error!.message).toContain(`more than ${MAX_LEADING_PATHS} paths before the value writes a character`);
      }
    });
  }

  it("the gateway refuses it as response_format and as a tool's parameters, and the agent the same before it builds a grammar", async () => {
    const schema = branchingChain(27, "anyOf");
    for (const [request, param] of [
      [{ response_format: responseFormat(schema) }, "response_format.json_schema.schema.$defs.l18"],
      [{ tools: tools(schema), tool_choice: "required" as const }, "tools[0].function.parameters.$defs.l18"],
      [{ tools: tools(schema) }, "tools[0].function.parameters.$defs.l18"],
    ] as const) {
      const atGateway = catchApiError(() => parse({ model: "qwen3-4b", messages, ...request }));
      expect([atGateway.status, atGateway.code, atGateway.param]).toEqual([400, "schema_too_complex", param]);
      const atAgent = await agentBuild(request as Partial<GenerateRequest>);
      expect([atAgent?.status, atAgent?.code, atAgent?.param]).toEqual([400, "schema_too_complex", param]);
    }
  });

  it("the agent spends one budget on a turn's tools, as the gateway does: tools that pass alone are refused together", async () => {
    const alone = branchingChain(16);
    expect(await agentBuild({ tools: tools(alone), tool_choice: "required" })).toBeUndefined();
    const three = [0, 1, 2].map((i) => ({ type: "function" as const, function: { name: `f${i}`, parameters: alone } }));
    expect((await agentBuild({ tools: three, tool_choice: "required" }))?.code).toBe("schema_too_complex");
    expect(catchApiError(() => parse({ model: "qwen3-4b", messages, tools: three })).code).toBe("schema_too_complex");
  });
});

describe("Grammar work (issue 41): branches that begin alike, nested", () => {
  it("each level doubles the stacks alive at once; past grammar_stacks it is 400 schema_too_complex naming that level", () => {
    for (let depth = 1; depth <= 9; depth++) expect(prepareSchema(ambiguousNesting(depth)).work.stacks).toBe(2 ** depth);
    const error = refusal(ambiguousNesting(14));
    expect([error?.code, error?.path]).toEqual(["schema_too_complex", "/$defs/l10"]);
    expect(error!.message).toContain(`more than ${SCHEMA_LIMITS.grammar_stacks} readings`);
  });

  it("branches told apart before anything nests do not add up: a discriminator, a first key, a kind of value", () => {
    const level = (below: string, kind: string) => ({ type: "object", properties: { kind: { const: kind }, a: { $ref: `#/$defs/${below}` } } });
    const $defs: Record<string, unknown> = { l0: { type: "integer" } };
    for (let i = 1; i <= 20; i++) $defs[`l${i}`] = { oneOf: [level(`l${i - 1}`, "x"), level(`l${i - 1}`, "y")] };
    expect(prepareSchema({ $defs, $ref: "#/$defs/l20" }).work.stacks).toBe(1);
    const byKey = { oneOf: [{ type: "object", properties: { and: { type: "array" } } }, { type: "object", properties: { or: { type: "array" } } }] };
    expect(prepareSchema(byKey).work.stacks).toBe(1);
    expect(prepareSchema({ oneOf: [{ type: "object" }, { type: "array" }, { type: "string" }, { type: "null" }] }).work.stacks).toBe(1);
    // integer and number both begin with a digit
    expect(prepareSchema({ type: ["integer", "number"] }).work.stacks).toBe(2);
  });

  it("recursion: a tree, a linked list and a discriminated expression are served; a recursive oneOf whose branches begin alike is not", () => {
    const tree = { $defs: { n: { type: "object", properties: { v: { type: "string" }, kids: { type: "array", items: { $ref: "#/$defs/n" } } } } }, $ref: "#/$defs/n" };
    const list = { $defs: { l: { oneOf: [{ type: "null" }, { type: "object", properties: { head: { type: "integer" }, tail: { $ref: "#/$defs/l" } } }] } }, $ref: "#/$defs/l" };
    const node = (op: string) => ({ type: "object", properties: { op: { const: op }, left: { $ref: "#/$defs/e" }, right: { $ref: "#/$defs/e" } } });
    const expression = { $defs: { e: { oneOf: [node("+"), node("-"), { type: "number" }] } }, $ref: "#/$defs/e" };
    // a node whose children are nodes or plain strings: the two never begin alike
    const mixed = { $defs: { n: { type: "object", properties: { kids: { type: "array", items: { anyOf: [{ $ref: "#/$defs/n" }, { type: "string" }] } } } } }, $ref: "#/$defs/n" };
    for (const schema of [tree, list, expression, mixed]) expect(prepareSchema(schema).work.stacks).toBe(1);
    const undiscriminated = { $defs: { e: { anyOf: [{ type: "object", properties: { left: { $ref: "#/$defs/e" }, op: { const: "+" } } }, { type: "object", properties: { left: { $ref: "#/$defs/e" }, op: { const: "-" } } }, { type: "integer" }] } }, $ref: "#/$defs/e" };
    const error = refusal(undiscriminated);
    expect([error?.code, error?.path]).toEqual(["schema_too_complex", "/$defs/e"]);
  });

  it("a pattern counts the readings its own rules keep (an enum its members alike in their first character)", () => {
    const union = (leaf: unknown) => ({ oneOf: [{ type: "object", properties: { a: leaf, b: { type: "null" } } }, { type: "object", properties: { a: leaf, c: { type: "null" } } }] });
    expect(prepareSchema(union({ type: "string", pattern: "^[0-9a-f]{8}-[0-9a-f]{4}$" })).work.stacks).toBe(2);
    expect(prepareSchema(union({ type: "string", pattern: "^[ab]*a[ab]{20}$" })).work.stacks).toBe(44);
    expect(prepareSchema(union({ enum: ["ab", "ac", "b"] })).work.stacks).toBe(4);
    expect(refusal(union({ type: "string", pattern: "^[ab]*a[ab]{600}$" }))?.code).toBe("schema_too_complex");
  });
});

describe("Grammar work (issue 41): what else llama.cpp does", () => {
  it("a $ref that reaches its own definition before writing a character is left recursion, which llama.cpp refuses: 400 invalid_value", () => {
    for (const schema of [
      { $defs: { a: { oneOf: [{ $ref: "#/$defs/a" }, { type: "string" }] } }, $ref: "#/$defs/a" },
      { $defs: { a: { $ref: "#/$defs/b" }, b: { anyOf: [{ type: "null" }, { $ref: "#/$defs/a" }] } }, $ref: "#/$defs/a" },
    ]) {
      const error = refusal(schema);
      expect(error?.code).toBe("invalid_value");
      expect(error!.message).toContain("left recursion");
    }
  });

  it("each {m,n} repetition's rules are charged once per distinct one (llama.cpp writes a rule per optional repeat, at most 2,000)", () => {
    const strings = (lengths: number[]) => ({ type: "object", properties: Object.fromEntries(lengths.map((n, i) => [`p${i}`, { type: "string", maxLength: n }])) });
    expect(prepareSchema(strings([500])).work.repeatedRules).toBe(500);
    // one rule for the same bounds however many properties have them; past 2,000 llama.cpp repeats without a bound
    expect(prepareSchema(strings(Array.from({ length: 50 }, () => 500))).work.repeatedRules).toBe(500);
    expect(prepareSchema(strings([5000])).work.repeatedRules).toBe(1);
    expect(prepareSchema({ type: "array", items: { type: "integer" }, minItems: 10, maxItems: 300 }).work.repeatedRules).toBe(290);
    const error = refusal(strings(Array.from({ length: 15 }, (_, i) => 1999 - i)));
    expect([error?.code, error?.path]).toEqual(["schema_too_complex", "/properties/p14"]);
  });

  it("the count's own walk and what it charges are on the request's one budget", () => {
    const budget = new SchemaBudget();
    prepareSchema(branchingChain(16), budget);
    expect(catchApiError(() => {
      try {
        prepareSchema(branchingChain(17), budget);
      } catch (err) {
        throw new ApiError((err as SchemaError).code, (err as Error).message);
      }
    }).code).toBe("schema_too_complex");
  });
});
