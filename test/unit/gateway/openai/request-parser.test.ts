// Issue 29 and 41, one pipeline for every route: a body is read within its nesting bound, admitted between its JSON
// parse and its costly parse, and parsed off the event loop when it carries a schema or is big, to the very request
// (or 400) the parse in place gives; each tenant waits its own turn, within a share per key and per user.
import { afterAll, describe, expect, it } from "vitest";
import { RequestParser, IN_PLACE_MAX_BYTES, type Admit, type Tenant } from "../../../../gateway/openai/request-parser.ts";
import { ApiError } from "../../../../src/errors.ts";
import { MAX_BODY_DEPTH } from "../../../../src/openai/json-body.ts";
import { parseRoute } from "../../../../src/openai/route-request.ts";
import { type RouteKind } from "../../../../src/openai/route-kinds.ts";
import { SCHEMA_ATTACKS } from "../../../fixtures/schema-attacks.ts";
import { CATALOG, NONCE } from "../../../fixtures/chat-request.ts";
import { catchApiError } from "../../../fixtures/api-error.ts";

const parser = new RequestParser(CATALOG, "none", 1);
afterAll(() => parser.close());

const base = { model: "qwen3-4b", messages: [{ role: "user", content: "hi" }] };
const weather = { type: "object", properties: { city: { type: "string" }, days: { type: "integer", minimum: 1 } }, required: ["city"] };
const withSchema = (schema: unknown) => ({ ...base, response_format: { type: "json_schema", json_schema: { name: "answer", schema } } });
const never = new AbortController().signal;
const inputs = { nonce: NONCE, receiptNonce: undefined };
const alice: Tenant = { key: "key_alice", user: "user:1" };
const admitAll: Admit = () => ({});
const bytesOf = (body: unknown) => new TextEncoder().encode(JSON.stringify(body));
const inPlace = (kind: RouteKind, body: unknown) => parseRoute(kind, body, { catalog: CATALOG, reasoningFormat: "none", ...inputs });
const parse = (body: unknown, tenant = alice, signal = never, admit = admitAll, kind: RouteKind = "chat", p = parser) => p.parse(kind, bytesOf(body), inputs, tenant, admit, signal);
/** A body well past the in-place size: a long message, and a megabyte in a field that changes nothing. */
const big = () => ({ ...base, messages: [{ role: "user", content: "x".repeat(IN_PLACE_MAX_BYTES + 1) }], user: "u".repeat(1 << 20) });

function writable(body: unknown): boolean {
  try {
    JSON.stringify(body);
    return true;
  } catch (err) {
    if (err instanceof RangeError) return false;
    throw err;
  }
}

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
      expect(await parse(body)).toEqual(inPlace("chat", body));
      expect(parser.workerAnswers).toBe(before + 1);
    }
  });

  it("the Responses route's schemas go to the worker too", async () => {
    const body = { model: "qwen3-4b", input: "hi", text: { format: { type: "json_schema", name: "answer", schema: weather } } };
    const before = parser.workerAnswers;
    expect(await parse(body, alice, never, admitAll, "responses")).toMatchObject({ kind: "responses", body: inPlace("responses", body).body });
    expect(parser.workerAnswers).toBe(before + 1);
  });

  it("the event loop turns while a schema spends its whole step budget in the worker", async () => {
    // a small schema may be answered within one turn; one that runs the budget out takes tens of milliseconds
    const attack = SCHEMA_ATTACKS.find((a) => a.code === "schema_too_complex")!;
    const { result, turns } = await timed(parse(withSchema(attack.schema)));
    expect((result as ApiError).code).toBe("schema_too_complex");
    expect(turns).toBeGreaterThan(0);
  });

  it("each hostile schema of the corpus gets, from the worker, the same 400 as in place, or the body's nesting bound", async () => {
    for (const attack of SCHEMA_ATTACKS) {
      const body = withSchema(attack.schema);
      // the deepest cannot even be written by JSON.stringify; bodies nested like them are the next describe's
      if (!writable(body)) continue;
      const { result } = await timed(parse(body));
      expect(result, attack.name).toBeInstanceOf(ApiError);
      const { status, code, param, message } = result as ApiError;
      if (code === "body_too_deep") continue; // nested past the body's bound: refused before any parse
      const here = catchApiError(() => inPlace("chat", body));
      expect([status, code, param, message], attack.name).toEqual([here.status, here.code, here.param, here.message]);
    }
  });

  it("a small body without a schema is parsed in place, in the same turn", async () => {
    const { result, turns } = await timed(parse(base));
    expect(result).toEqual(inPlace("chat", base));
    expect(turns).toBe(0);
  });

  it("a caller who hangs up while its parse waits for the worker leaves the line with the signal's reason", async () => {
    const busy = parse(withSchema(SCHEMA_ATTACKS[0]!.schema)).catch((err: unknown) => err);
    const hangUp = new AbortController();
    const waiting = parse(withSchema(weather), alice, hangUp.signal);
    hangUp.abort(new Error("caller gone"));
    await expect(waiting).rejects.toThrow("caller gone");
    expect(await busy).toBeInstanceOf(ApiError);
  });
});

describe("Issue 41 A body's nesting is bounded before it is parsed", () => {
  const nested = (depth: number) => `{"model":"qwen3-4b","messages":[{"role":"user","content":"hi"}],"user_data":${"[".repeat(depth)}${"]".repeat(depth)}}`;

  it("past the bound, in an ignored field, is a 400 naming the limit, in place and in the worker", async () => {
    const small = new TextEncoder().encode(nested(MAX_BODY_DEPTH));
    const huge = new TextEncoder().encode(nested(2_000_000));
    for (const bytes of [small, huge]) {
      const err = await parser.parse("chat", bytes, inputs, alice, admitAll, never).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect([(err as ApiError).status, (err as ApiError).code]).toEqual([400, "body_too_deep"]);
      expect((err as ApiError).message).toContain(`at most ${MAX_BODY_DEPTH} levels`);
    }
  });

  it("a bracket inside a string counts for nothing", async () => {
    const body = { ...base, messages: [{ role: "user", content: "[".repeat(MAX_BODY_DEPTH * 2) + '\\"{' }] };
    expect(await parse(body)).toEqual(inPlace("chat", body));
  });

  it("a big body is read and parsed in the worker, the loop turning meanwhile", async () => {
    const before = parser.workerAnswers;
    const body = big();
    const { result, turns } = await timed(parse(body));
    expect(result).toEqual(inPlace("chat", body));
    expect(parser.workerAnswers).toBe(before + 1);
    expect(turns).toBeGreaterThan(0);
  });
});

describe("Issue 41 Admission comes between a body's JSON parse and its costly parse, on every route", () => {
  for (const [kind, body] of [
    ["chat", withSchema(weather)],
    ["chat", big()],
    ["responses", { model: "qwen3-4b", input: "x".repeat(IN_PLACE_MAX_BYTES + 1), provider: "ABCDEF0123", prompt_cache_key: "conv-1" }],
    ["completions", { model: "qwen3-4b", prompt: "hi", provider_key_id: "abcdef0123" }],
  ] as [RouteKind, Record<string, unknown>][]) {
    it(`${kind}, ${JSON.stringify(body).length} bytes: the peek names model, pin and cache key; a refusal parses nothing`, async () => {
      const peeks: unknown[] = [];
      const before = parser.workerAnswers;
      const full = new ApiError("overloaded", "full");
      const err = await parse(body, alice, never, (peek) => (peeks.push(peek), (() => { throw full; })()), kind).catch((e: unknown) => e);
      expect(err).toBe(full);
      expect(peeks).toEqual([{ model: "qwen3-4b", ...(body.provider ?? body.provider_key_id ? { pin: String(body.provider ?? body.provider_key_id).toLowerCase() } : {}), ...(body.prompt_cache_key ? { promptCacheKey: body.prompt_cache_key } : {}) }]);
      expect(parser.workerAnswers).toBe(before);
    });
  }

  it("the scope and owner admission returns are the ones sealed", async () => {
    const cache = { cacheScope: "ab".repeat(32), cacheOwner: "cd".repeat(32) };
    for (const body of [base, withSchema(weather), big()]) {
      const sealed = (await parse(body, alice, never, () => cache)).body;
      expect([sealed.cache_scope, sealed.cache_owner]).toEqual([cache.cacheScope, cache.cacheOwner]);
    }
  });
});

describe("Issue 41 Each key and each user has its own share of the pool", () => {
  const budgetBuster = withSchema(SCHEMA_ATTACKS.find((a) => a.code === "schema_too_complex")!.schema);

  it("another user's small schema is taken before a flooding user's backlog", async () => {
    const flooder: Tenant = { key: "key_flood", user: "user:2" };
    const order: string[] = [];
    const flood = Array.from({ length: 12 }, (_, i) => parse(budgetBuster, flooder).catch(() => undefined).finally(() => order.push(`flood${i}`)));
    const honest = parse(withSchema(weather), alice).finally(() => order.push("honest"));
    await Promise.all([...flood, honest]);
    // the flood's first body was being parsed when the honest one arrived, and its second had the turn already:
    // the honest one is next, whatever the flood's backlog (a single line would put it 13th)
    expect(order.indexOf("honest")).toBeLessThanOrEqual(2);
  });

  it("past its share a key gets 429 at once, and its user past theirs over all their keys; another user is still served", async () => {
    const small = new RequestParser(CATALOG, "none", 1, { perKey: 2, perUser: 3 });
    const run = (tenant: Tenant) => parse(budgetBuster, tenant, never, admitAll, "chat", small).then(
      () => { throw new Error("a budget-exhausting schema was parsed"); },
      (err: unknown) => err as ApiError,
    );
    try {
      const one: Tenant = { key: "key_one", user: "user:3" };
      const two: Tenant = { key: "key_two", user: "user:3" };
      const held = [run(one), run(one)];
      const overKey = await run(one);
      expect([overKey.status, overKey.code]).toEqual([429, "rate_limited"]);
      expect(overKey.message).toContain("This API key already has 2 request bodies");
      held.push(run(two));
      const overUser = await run(two);
      expect([overUser.status, overUser.code]).toEqual([429, "rate_limited"]);
      expect(overUser.message).toContain("This key's user already has 3 request bodies");
      expect((await run({ key: "key_other", user: "user:4" })).code).toBe("schema_too_complex");
      expect((await Promise.all(held)).map((e) => e.code)).toEqual(["schema_too_complex", "schema_too_complex", "schema_too_complex"]);
      // the shares are given back as the bodies are answered
      expect((await run(one)).code).toBe("schema_too_complex");
    } finally {
      await small.close();
    }
  });
});
