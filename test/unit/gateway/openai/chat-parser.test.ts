// Issue 29, schema work off the event loop: a body with a schema is parsed in a worker thread with the very answer
// (or 400) the parse in place gives; a body without one is parsed in place; a caller who hangs up leaves the line.
import { afterAll, describe, expect, it } from "vitest";
import { ChatParser } from "../../../../gateway/openai/chat-parser.ts";
import { ApiError } from "../../../../src/errors.ts";
import { SCHEMA_ATTACKS } from "../../../fixtures/schema-attacks.ts";
import { CATALOG, NONCE, parse } from "../../../fixtures/chat-request.ts";
import { catchApiError } from "../../../fixtures/api-error.ts";

const parser = new ChatParser(CATALOG, "none", 1);
afterAll(() => parser.close());

const base = { model: "qwen3-4b", messages: [{ role: "user", content: "hi" }] };
const weather = { type: "object", properties: { city: { type: "string" }, days: { type: "integer", minimum: 1 } }, required: ["city"] };
const withSchema = (schema: unknown) => ({ ...base, response_format: { type: "json_schema", json_schema: { name: "answer", schema } } });
const never = new AbortController().signal;

/** The parser's answer, and how many turns of the event loop passed while it was worked. */
async function timed<T>(work: Promise<T>): Promise<{ result: T | ApiError; turns: number }> {
  let turns = 0;
  let done = false;
  const tick = () => void (done || (turns++, setImmediate(tick)));
  setImmediate(tick);
  try {
    return { result: await work, turns };
  } catch (err) {
    return { result: err as ApiError, turns };
  } finally {
    done = true;
  }
}

describe("Issue 29 Schema work off the event loop", () => {
  it("a body with a schema is parsed in a worker, to what the parse in place builds", async () => {
    for (const body of [withSchema(weather), { ...base, tools: [{ type: "function", function: { name: "get_weather", parameters: weather } }] }]) {
      const before = parser.workerAnswers;
      expect(await parser.parse(body, { nonce: NONCE, receiptNonce: undefined }, never)).toEqual(parse(body));
      expect(parser.workerAnswers).toBe(before + 1);
    }
  });

  it("the event loop turns while a schema spends its whole step budget in the worker", async () => {
    // a small schema may be answered within one turn; one that runs the budget out takes tens of milliseconds
    const attack = SCHEMA_ATTACKS.find((a) => a.code === "schema_too_complex")!;
    const { result, turns } = await timed(parser.parse(withSchema(attack.schema), { nonce: NONCE, receiptNonce: undefined }, never));
    expect((result as ApiError).code).toBe("schema_too_complex");
    expect(turns).toBeGreaterThan(0);
  });

  it("each hostile schema of the corpus gets, from the worker, the same 400 as in place", async () => {
    // the deepest go in place: too deep to clone, they meet the depth limit at once
    for (const attack of SCHEMA_ATTACKS) {
      const body = withSchema(attack.schema);
      const { result } = await timed(parser.parse(body, { nonce: NONCE, receiptNonce: undefined }, never));
      const inPlace = catchApiError(() => parse(body));
      expect(result, attack.name).toBeInstanceOf(ApiError);
      expect([(result as ApiError).status, (result as ApiError).code, (result as ApiError).param, (result as ApiError).message], attack.name).toEqual([inPlace.status, inPlace.code, inPlace.param, inPlace.message]);
    }
  });

  it("a body without a schema is parsed in place, in the same turn", async () => {
    const { result, turns } = await timed(parser.parse(base, { nonce: NONCE, receiptNonce: undefined }, never));
    expect(result).toEqual(parse(base));
    expect(turns).toBe(0);
  });

  it("a caller who hangs up while its parse waits for the worker leaves the line with the signal's reason", async () => {
    const busy = parser.parse(withSchema(SCHEMA_ATTACKS[0]!.schema), { nonce: NONCE, receiptNonce: undefined }, never).catch((err: unknown) => err);
    const hangUp = new AbortController();
    const waiting = parser.parse(withSchema(weather), { nonce: NONCE, receiptNonce: undefined }, hangUp.signal);
    hangUp.abort(new Error("caller gone"));
    await expect(waiting).rejects.toThrow("caller gone");
    expect(await busy).toBeInstanceOf(ApiError);
  });
});
