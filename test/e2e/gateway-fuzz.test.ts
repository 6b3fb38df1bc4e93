// Property: whatever JSON (or non-JSON) is thrown at POST /v1/chat/completions, a real `svc-gateway serve`
// answers 200 or a 4xx SPEC §2.7 envelope, never a 5xx, never crashes, and leaves its provider free.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyReceipt } from "../../src/receipt/receipt.ts";
import { listProviders, post, startGateway, type GatewayProcess } from "../fixtures/gateway.ts";
import { readSse } from "../../harness/sse.ts";

let gw: GatewayProcess;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(() => gw.stop());

const ACTIONS = ["fix_key", "retry", "wait", "fix_request", "pick_model"];

/** SPEC §4.1: a well-formed pin to a machine that is not online is a 503, the one 5xx a caller can cause. */
const pinsAbsentProvider = (body: unknown) => /^[0-9a-f]{8,64}$/i.test(String((body as { provider?: unknown } | null)?.provider));

async function checkAnswer(res: Response, body?: unknown): Promise<void> {
  if (res.status === 503 && pinsAbsentProvider(body)) {
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("provider_unavailable");
    return;
  }
  if (res.status === 200 && res.headers.get("content-type") === "text/event-stream") {
    const last = (await readSse(res)).data.at(-1)!;
    // a stream ends with [DONE], or with a fault found once it had started: a prompt too long for the
    // model, a logit_bias token it does not have, or (SPEC §4.1) a pinned machine that is not online
    if (last !== "[DONE]") {
      const biased = typeof (body as { logit_bias?: unknown } | undefined)?.logit_bias === "object";
      const expected = pinsAbsentProvider(body) ? ["provider_unavailable"] : ["context_length_exceeded", ...(biased ? ["invalid_value"] : [])];
      expect(expected).toContain((JSON.parse(last) as { error: { code: string } }).error.code);
    }
    return;
  }
  const answer = (await res.json()) as Record<string, unknown>;
  if (res.status === 200) {
    expect(answer.object).toBe("chat.completion");
    return;
  }
  expect(res.status).toBeGreaterThanOrEqual(400);
  expect(res.status).toBeLessThan(500);
  expect(Object.keys(answer)).toEqual(["error"]);
  const error = answer.error as Record<string, unknown>;
  expect(Object.keys(error).sort()).toEqual(["code", "message", "param", "svc_action", "type"]);
  expect(typeof error.message).toBe("string");
  expect(typeof error.code).toBe("string");
  expect(error.param === null || typeof error.param === "string").toBe(true);
  expect(ACTIONS).toContain(error.svc_action);
}

const junk = fc.jsonValue({ maxDepth: 3 });
const validPart = fc.record({ type: fc.constantFrom("text", "input_text"), text: fc.string({ maxLength: 20 }) });
const validMessage = fc.record({
  role: fc.constantFrom("user", "system", "assistant", "developer"),
  content: fc.oneof(fc.string({ maxLength: 40 }), fc.array(validPart, { maxLength: 3 })),
});
const validBody = fc.record(
  {
    model: fc.constantFrom("qwen3-4b", "svc-local", "SVC-TEST/TINY-QWEN3-4B-GGUF"),
    messages: fc.array(validMessage, { minLength: 1, maxLength: 3 }),
    max_tokens: fc.integer({ min: 1, max: 4 }), // small budgets keep valid requests quick
    temperature: fc.double({ min: 0, max: 2, noNaN: true }),
    stream: fc.boolean(),
    stream_options: fc.record({ include_usage: fc.boolean() }),
  },
  { requiredKeys: ["messages", "max_tokens"] },
);
/** Text with the characters that trip encoders: lone surrogates (from JSON escapes), NUL and other controls. */
const awkwardText = fc
  .array(
    fc.oneof(
      fc.string({ maxLength: 8 }),
      fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit)),
      fc.constantFrom("\u0000", "\u0001", "\u001f", "\u007f", "\ufffe", "\uffff", "\ud83d\ude00"),
    ),
    { minLength: 1, maxLength: 6 },
  )
  .map((pieces) => pieces.join(""));

/** Byte sequences no UTF-8 decoder may accept: overlong "/" and NUL, an encoded surrogate, a lone continuation byte, 0xFF. */
const NOT_UTF8 = [[0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xf0, 0x80, 0x80, 0xaf], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0x80], [0xff]].map((b) => Buffer.from(b));

const FIELDS = [
  "none", "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "stream", "stream_options", "provider", "role", "content", "part",
  "stop", "top_p", "top_k", "seed", "presence_penalty", "logit_bias", "n", "tools", "response_format",
] as const;

/** A valid request with one field replaced by anything at all (or removed); sometimes left valid. */
const nearlyValid = fc
  .tuple(validBody, fc.constantFrom(...FIELDS), fc.option(fc.oneof(junk, fc.stringMatching(/^[0-9a-fA-F ]{6,10}$/)), { nil: undefined }))
  .map(([body, field, value]) => {
    const out: Record<string, unknown> = { ...body, messages: body.messages.map((m) => ({ ...m })) };
    const first = (out.messages as Record<string, unknown>[])[0]!;
    if (field === "role" || field === "content") first[field] = value;
    else if (field === "part") first.content = [{ type: "text", text: "x" }, value];
    else if (field !== "none") out[field] = value;
    return out;
  });

describe("§7 Errors: random input never gets a 5xx", () => {
  it("nearly valid request bodies", async () => {
    await fc.assert(
      fc.asyncProperty(nearlyValid, async (body) => checkAnswer(await post(gw, "/v1/chat/completions", body), body)),
      { numRuns: 200 },
    );
  });

  it("arbitrary JSON values", async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), async (body) => checkAnswer(await post(gw, "/v1/chat/completions", JSON.stringify(body)))),
      { numRuns: 100 },
    );
  });

  it("arbitrary text that is mostly not JSON", async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: "binary" }), async (text) => checkAnswer(await post(gw, "/v1/chat/completions", text))),
      { numRuns: 100 },
    );
  });

  it("content with lone surrogates, NULs and control characters: 400 naming the field when not text, else served", async () => {
    const sessions = () => gw.agents[0]!.stdout().match(/session \S+ start/g)?.length ?? 0;
    await fc.assert(
      fc.asyncProperty(awkwardText, fc.boolean(), async (content, asPart) => {
        const before = sessions();
        const body = { messages: [{ role: "user", content: asPart ? [{ type: "text", text: content }] : content }], max_tokens: 1 };
        // JSON.stringify writes a lone surrogate as its escape ("\ud800"), as a hostile client would
        const res = await post(gw, "/v1/chat/completions", body);
        if (!/\p{Surrogate}/u.test(content)) {
          expect(res.status).toBe(200);
          await res.body?.cancel();
          return;
        }
        expect(res.status).toBe(400);
        const { error } = (await res.json()) as { error: Record<string, unknown> };
        expect(error).toMatchObject({ code: "invalid_value", param: asPart ? "messages[0].content[0].text" : "messages[0].content", svc_action: "fix_request" });
        expect(sessions(), "no provider session for a refused request").toBe(before);
      }),
      { numRuns: 60 },
    );
  });

  it("a lone surrogate in a tool's description, a history call's id or arguments, or a Responses function_call: 400 naming the field, not a 500 (issue 41)", async () => {
    const sessions = () => gw.agents[0]!.stdout().match(/session \S+ start/g)?.length ?? 0;
    const before = sessions();
    const tool = (description: string) => ({ type: "function", function: { name: "get_weather", description, parameters: { type: "object", properties: { city: { type: "string" } } } } });
    const history = (id: string, args: string) => [
      { role: "user", content: "weather?" },
      { role: "assistant", content: null, tool_calls: [{ id, type: "function", function: { name: "get_weather", arguments: args } }] },
      { role: "tool", tool_call_id: id, content: "sunny" },
    ];
    const cases: [string, unknown, string][] = [
      ["/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], tools: [tool("lone \ud800")], max_tokens: 1 }, "tools[0].function.description"],
      ["/v1/chat/completions", { messages: history("call_\udfff", "{}"), tools: [tool("fine")], max_tokens: 1 }, "messages[1].tool_calls[0].id"],
      ["/v1/chat/completions", { messages: history("call_1", '{"city":"\ud83d"}'), tools: [tool("fine")], max_tokens: 1 }, "messages[1].tool_calls[0].function.arguments"],
      [
        "/v1/responses",
        { input: [{ role: "user", content: "weather?" }, { type: "function_call", call_id: "call_1", name: "get_weather", arguments: '{"city":"\ud800"}' }, { type: "function_call_output", call_id: "call_1", output: "sunny" }], tools: [{ type: "function", name: "get_weather" }], max_output_tokens: 16 },
        "input[1]",
      ],
    ];
    for (const [path, body, param] of cases) {
      // JSON.stringify writes a lone surrogate as its escape ("\ud800"), as a hostile client would
      const res = await post(gw, path, body);
      expect([param, res.status]).toEqual([param, 400]);
      const { error } = (await res.json()) as { error: Record<string, unknown> };
      expect(error).toMatchObject({ code: "invalid_value", param, svc_action: "fix_request" });
    }
    expect(sessions(), "no provider session for a refused request").toBe(before);
  });

  it("bytes that are not UTF-8 inside a string (overlong forms, encoded surrogates, stray bytes): 400 invalid_json", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...NOT_UTF8), fc.string({ maxLength: 10 }), async (bytes, around) => {
        const [head, tail] = JSON.stringify({ messages: [{ role: "user", content: `${around}\u0001${around}` }], max_tokens: 1 }).split("\\u0001");
        const res = await fetch(`${gw.url}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${gw.key}`, "content-type": "application/json" },
          body: Buffer.concat([Buffer.from(head!), bytes, Buffer.from(tail!)]),
        });
        expect(res.status).toBe(400);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe("invalid_json");
      }),
      { numRuns: 30 },
    );
  });

  it("a NUL in content is text: llama.cpp gets it as one byte token and the receipt covers it", async () => {
    const served = async (content: string) => {
      const res = await post(gw, "/v1/chat/completions", { messages: [{ role: "user", content }], max_tokens: 1 });
      expect(res.status).toBe(200);
      return (await res.json()) as { choices: { message: { content: string } }[]; usage: { prompt_tokens: number }; svc_receipt: unknown };
    };
    const plain = await served("ab");
    const withNul = await served("a\u0000b");
    expect(withNul.usage.prompt_tokens).toBe(plain.usage.prompt_tokens + 1);
    expect((await served("a\u0000\u0000\u0000b")).usage.prompt_tokens).toBe(plain.usage.prompt_tokens + 3);
    expect(verifyReceipt(withNul.svc_receipt, { providerId: gw.providerId, content: withNul.choices[0]!.message.content }).status).toBe("valid");
  });

  it("afterwards the process is alive, logged no failure and its provider is free", async () => {
    expect(gw.child.exitCode).toBeNull();
    expect(gw.stderr()).toBe("");
    expect(gw.logs().filter((l) => Number(l.level) >= 50)).toEqual([]);
    // the listing follows the coordinator's feed, which hears the last session's end a moment after the caller
    await expect.poll(() => listProviders(gw), { timeout: 10_000 }).toMatchObject([{ busy: false, waiting: 0 }]);
  });
});
