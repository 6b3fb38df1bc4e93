// Design §4 point 3, audits in the shape of callers' traffic: a request's shape keeps no content; an item in a
// caller's shape parses to the caller's sealed request but for its content and the fresh values; the sketch is
// bounded, follows the last hours, and draws by weight an item that can take the shape.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { CorpusItem } from "../../../../gateway/audit/corpus.ts";
import { CorpusIndex, draftAudit, fits, MAX_SHAPES, shaped, shapeOf, SHAPE_HALF_LIFE_MS, TrafficShapes, type Shape } from "../../../../gateway/audit/traffic-shape.ts";
import type { RouteKind } from "../../../../src/openai/route-kinds.ts";
import { parseRoute } from "../../../../src/openai/route-request.ts";
import { CATALOG, NONCE } from "../../../fixtures/chat-request.ts";
import { fakeDice } from "../../../fixtures/fake-dice.ts";

type Route = Exclude<RouteKind, "embeddings">;
const COMPLETE = { seed: 123_456 };
const parsed = (route: Route, body: Record<string, unknown>, receiptNonce?: string) => {
  const request = parseRoute(route, { model: "qwen3-4b", ...body }, { catalog: CATALOG, nonce: NONCE, complete: COMPLETE, receiptNonce, cacheScope: "a".repeat(64), cacheOwner: "b".repeat(64) });
  if (request.kind === "embeddings") throw new Error("not an audit's route");
  return request;
};
const FRESH = ["seed", "client_nonce", "messages", "prompt"];
const withoutFresh = (body: object) => Object.fromEntries(Object.entries(body).filter(([k]) => !FRESH.includes(k)));

/** Callers' bodies of every route and many shapes, the content of each a secret the shape must not keep. */
const SECRET = "SECRET-CONTENT";
const TOOLS = [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }];
const RESPONSES_TOOLS = [{ type: "function", name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } }];
const CALLERS: { route: Route; body: Record<string, unknown>; nonce?: string }[] = [
  { route: "chat", body: { messages: [{ role: "user", content: SECRET }] } },
  { route: "chat", body: { messages: [{ role: "user", content: SECRET }], max_tokens: 64, temperature: 0.2, top_p: 0.9, seed: 42, stream: true } },
  { route: "chat", body: { messages: [{ role: "user", content: SECRET }], max_completion_tokens: 10, logprobs: true, top_logprobs: 5, presence_penalty: 0.5, top_k: 40, min_p: 0.05 } },
  { route: "chat", body: { messages: [{ role: "user", content: SECRET }], tools: TOOLS, tool_choice: "required", temperature: 1 }, nonce: "n".repeat(24) },
  { route: "chat", body: { messages: [{ role: "user", content: SECRET }], cache_prompt: false, frequency_penalty: 0.1, repetition_penalty: 1.1 } },
  { route: "completions", body: { prompt: SECRET, max_tokens: 16, logprobs: 2, stream: true } },
  { route: "completions", body: { prompt: SECRET, temperature: 0 } },
  { route: "responses", body: { input: SECRET, max_output_tokens: 30, include: ["message.output_text.logprobs"], top_logprobs: 4 } },
  { route: "responses", body: { input: SECRET, stream: true, tools: RESPONSES_TOOLS, seed: 7 }, nonce: "q".repeat(40) },
];
/** The corpus's bodies for each route and tool-ness, in shapes of their own that the caller's must override. */
const ITEM_BODIES: Record<string, Record<string, unknown>> = {
  chat: { messages: [{ role: "user", content: "corpus text" }], max_tokens: 3, stream: true, temperature: 1.5, logprobs: true, top_logprobs: 1, seed: 9 },
  "chat+tools": { messages: [{ role: "user", content: "corpus text" }], tools: TOOLS, tool_choice: "required", top_p: 0.1 },
  completions: { prompt: "corpus text", max_tokens: 2, logprobs: 1 },
  responses: { input: "corpus text", max_output_tokens: 99, cache_prompt: false },
  "responses+tools": { input: "corpus text", tools: RESPONSES_TOOLS },
};
const itemFor = (route: Route, body: Record<string, unknown>): CorpusItem => {
  const key = body.tools === undefined ? route : `${route}+tools`;
  return { id: key, kind: body.tools === undefined ? "chat" : "tools", route, body: ITEM_BODIES[key]! };
};

describe("§4 point 3: a request's shape", () => {
  it("keeps no content: not the messages, prompt, input, tools or nonce", () => {
    for (const { route, body, nonce } of CALLERS) {
      const shape = JSON.stringify(shapeOf(parsed(route, body, nonce), COMPLETE.seed));
      for (const secret of [SECRET, "get_weather", "city", "n".repeat(16), "q".repeat(16)]) expect(shape).not.toContain(secret);
    }
  });

  it("keeps a seed the caller chose, and not one the gateway drew", () => {
    expect(shapeOf(parsed("chat", CALLERS[1]!.body), COMPLETE.seed)!.sampling.seed).toBe(42);
    expect(shapeOf(parsed("chat", CALLERS[0]!.body), COMPLETE.seed)!.sampling).toEqual({});
  });

  it("an item in a caller's shape parses to the caller's sealed request but for the content and the fresh values, on every route", () => {
    for (const { route, body, nonce } of CALLERS) {
      const caller = parsed(route, body, nonce);
      const shape = shapeOf(caller, COMPLETE.seed)!;
      const item = itemFor(route, body);
      expect(fits(item, shape)).toBe(true);
      const audit = shaped(item, shape);
      const sent = parsed(route, audit.body, audit.headers["x-svc-receipt-nonce"]);
      // the tools of a tools item are the item's own: content, like its messages
      const { tools: _a, ...auditRest } = withoutFresh(sent.body);
      const { tools: _c, ...callerRest } = withoutFresh(caller.body);
      expect(auditRest, JSON.stringify(body)).toEqual(callerRest);
      expect([sent.stream, sent.logprobs]).toEqual([caller.stream, caller.logprobs]);
      expect(Object.keys(sent.body).sort()).toEqual(Object.keys(caller.body).sort());
      // the receipt nonce: present as the caller's was, of its length, never its value
      expect(sent.body.client_nonce?.length).toBe(caller.body.client_nonce?.length);
      if (caller.body.client_nonce !== null) expect(sent.body.client_nonce).not.toBe(caller.body.client_nonce);
      expect(shapeOf(sent, COMPLETE.seed)).toEqual(shape);
    }
  });

  it("an item fits a shape only on its route, with tools exactly when the shape has them", () => {
    const chat = shapeOf(parsed("chat", CALLERS[0]!.body), COMPLETE.seed)!;
    const tools = shapeOf(parsed("chat", CALLERS[3]!.body), COMPLETE.seed)!;
    expect(fits(itemFor("chat", {}), chat)).toBe(true);
    expect(fits(itemFor("chat", { tools: TOOLS }), chat)).toBe(false);
    expect(fits(itemFor("chat", {}), tools)).toBe(false);
    expect(fits(itemFor("responses", {}), chat)).toBe(false);
  });
});

describe("§4 point 3: the receipt nonce", () => {
  const CHAT = CALLERS[0]!;
  const item = itemFor("chat", CHAT.body);
  const auditNonces = (callerNonce: string, count = 200) => {
    const shape = shapeOf(parsed("chat", CHAT.body, callerNonce), COMPLETE.seed)!;
    return Array.from({ length: count }, () => shaped(item, shape).headers["x-svc-receipt-nonce"]!);
  };

  it.each([
    ["lower hex", randomBytes(16).toString("hex"), /^[0-9a-f]{32}$/],
    ["upper hex", randomBytes(20).toString("hex").toUpperCase(), /^[0-9A-F]{40}$/],
    ["lower-case letters", "n".repeat(24), /^[a-z]{24}$/],
    ["lower-case letters and digits", "k3j4h5g6f7d8s9a0q1w2", /^[a-z0-9]{20}$/],
    ["digits", "2026112723000000", /^[0-9]{16}$/],
  ])("a caller's %s nonce gives audits nonces of its length from that alphabet, never another character", (_name, nonce, alphabet) => {
    for (const drawn of auditNonces(nonce)) expect(drawn).toMatch(alphabet);
  });

  it("a caller's base64url nonce gives audits nonces of its length that use all of base64url", () => {
    const drawn = auditNonces(randomBytes(24).toString("base64url"));
    for (const n of drawn) expect(n).toMatch(/^[A-Za-z0-9_-]{32}$/);
    const all = drawn.join("");
    for (const part of [/[a-z]/, /[A-Z]/, /[0-9]/, /-/, /_/]) expect(all).toMatch(part);
  });

  it("keeps the alphabet, never the nonce: hex in either case, base64url, else the classes seen", () => {
    const alphabetOf = (nonce: string) => shapeOf(parsed("chat", CHAT.body, nonce), COMPLETE.seed)!.client_nonce;
    expect(alphabetOf("0123456789abcdef")).toEqual({ length: 16, alphabet: "hex" });
    expect(alphabetOf("0123456789ABCDEF")).toEqual({ length: 16, alphabet: "HEX" });
    expect(alphabetOf("aZ".repeat(8))).toEqual({ length: 16, alphabet: "base64url" });
    expect(alphabetOf("abc-def_ghi-jkl_")).toEqual({ length: 16, alphabet: ["lower", "symbol"] });
    expect(alphabetOf("0".repeat(16))).toEqual({ length: 16, alphabet: ["digit"] });
  });
});

const shape = (max_tokens: number): Shape => ({ ...shapeOf(parsed("chat", CALLERS[0]!.body), COMPLETE.seed)!, max_tokens });
const share = (shapes: TrafficShapes, which: number, draws = 4_000) => {
  let hits = 0;
  for (let i = 0; i < draws; i++) if (shapes.draw(() => true)!.max_tokens === which) hits++;
  return hits / draws;
};

describe("§4 point 3: the sketch", () => {
  it("draws shapes as often as callers sent them", () => {
    const shapes = new TrafficShapes(fakeDice(1));
    for (let i = 0; i < 300; i++) shapes.note(shape(1));
    for (let i = 0; i < 100; i++) shapes.note(shape(2));
    expect(share(shapes, 1)).toBeGreaterThan(0.7);
    expect(share(shapes, 1)).toBeLessThan(0.8);
  });

  it("follows the last hours: an hour halves a shape's weight, and one unseen for long is forgotten", () => {
    const dice = fakeDice(2);
    const shapes = new TrafficShapes(dice);
    for (let i = 0; i < 100; i++) shapes.note(shape(1));
    dice.t += SHAPE_HALF_LIFE_MS;
    for (let i = 0; i < 100; i++) shapes.note(shape(2));
    // 50 against 100
    expect(share(shapes, 2)).toBeGreaterThan(0.62);
    expect(share(shapes, 2)).toBeLessThan(0.71);
    dice.t += 20 * SHAPE_HALF_LIFE_MS;
    expect(shapes.draw(() => true)).toBeUndefined();
    expect(shapes.size).toBe(0);
  });

  it(`holds at most ${MAX_SHAPES} shapes, forgetting the rarest`, () => {
    const shapes = new TrafficShapes(fakeDice(3));
    for (let i = 0; i < 5; i++) shapes.note(shape(0));
    for (let i = 1; i <= 3 * MAX_SHAPES; i++) shapes.note(shape(i));
    expect(shapes.size).toBe(MAX_SHAPES);
    expect(shapes.draw((s) => s.max_tokens === 0)).toEqual(shape(0));
  });
});

describe("§4 point 3: an audit's draft", () => {
  const corpus = new CorpusIndex([itemFor("chat", {}), itemFor("chat", { tools: TOOLS }), itemFor("completions", {})]);

  it("with no traffic seen, an item as the corpus holds it", () => {
    const { item, headers } = draftAudit(corpus, new TrafficShapes(fakeDice(4)), fakeDice(4));
    expect(corpus.items).toContain(item);
    expect(headers).toEqual({});
  });

  it("with traffic, a shape callers sent and an item that can take it; a shape no item fits is never drawn", () => {
    const dice = fakeDice(5);
    const shapes = new TrafficShapes(dice);
    shapes.note(shapeOf(parsed("chat", CALLERS[3]!.body, CALLERS[3]!.nonce), COMPLETE.seed));
    for (let i = 0; i < 50; i++) shapes.note(shapeOf(parsed("responses", CALLERS[7]!.body), COMPLETE.seed));
    for (let i = 0; i < 20; i++) {
      const { item, headers } = draftAudit(corpus, shapes, dice);
      expect([item.id, item.body.temperature, headers["x-svc-receipt-nonce"]?.length]).toEqual(["chat+tools", 1, 24]);
    }
  });
});
