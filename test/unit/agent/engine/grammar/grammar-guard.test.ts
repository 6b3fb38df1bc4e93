// The agent's guard on llama.cpp's grammar work as it happens (agent/engine/grammar/grammar-guard.ts), fed times by
// hand: a build or a token past its budget is the caller's 400 schema_too_complex; a slow machine is not.
import { describe, expect, it } from "vitest";
import { DEFAULT_GRAMMAR_BUDGET, slowCompile, TokenPace } from "../../../../../agent/engine/grammar/grammar-guard.ts";
import { catchApiError } from "../../../../fixtures/api-error.ts";

const PARAM = "response_format.json_schema.schema";

describe("Grammar guard (issue 41): building", () => {
  it("a grammar built within the budget passes; one past it is 400 schema_too_complex naming the schema", () => {
    expect(slowCompile(DEFAULT_GRAMMAR_BUDGET, PARAM, DEFAULT_GRAMMAR_BUDGET.compileMs)).toBeUndefined();
    const error = slowCompile(DEFAULT_GRAMMAR_BUDGET, PARAM, DEFAULT_GRAMMAR_BUDGET.compileMs + 1);
    expect([error?.status, error?.code, error?.param]).toEqual([400, "schema_too_complex", PARAM]);
  });
});

describe("Grammar guard (issue 41): sampling", () => {
  it("the first token (which carries the prompt) is never held against the grammar", () => {
    expect(() => new TokenPace(DEFAULT_GRAMMAR_BUDGET, PARAM).token(60_000)).not.toThrow();
  });

  it("a token past the budget ends the session, whatever came before it", () => {
    const pace = new TokenPace(DEFAULT_GRAMMAR_BUDGET, PARAM);
    for (const ms of [300, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2000]) pace.token(ms);
    const error = catchApiError(() => pace.token(2001));
    expect([error.status, error.code, error.param]).toEqual([400, "schema_too_complex", PARAM]);
    expect(error.message).toContain("to sample token 14");
  });

  it("a machine slow for every token is given that many times its fastest token", () => {
    const pace = new TokenPace(DEFAULT_GRAMMAR_BUDGET, PARAM);
    for (const ms of [9000, 500, 800, 3000, 9999]) pace.token(ms);
    expect(() => pace.token(DEFAULT_GRAMMAR_BUDGET.tokenFactor * 500 + 1)).toThrow(/its grammar took 10.0 s to sample token 6/);
  });
});
