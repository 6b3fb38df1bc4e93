// DESIGN §8, a provider is a stranger: what it may send back for a session (answer-bounds), when (deadlines),
// which of its errors reach the caller (provider-errors), and when its faults rest it (provider-faults).
import { describe, expect, it } from "vitest";
import { AnswerBounds, answerLimits, BYTES_PER_TOKEN, MAX_ANSWER_TOKENS, pieceBytes, WireBudget } from "../../../../src/session/answer-bounds.ts";
import { nextDeadline } from "../../../../gateway/directory/deadlines.ts";
import { MAX_SESSION_WIRE_BYTES } from "../../../../src/wire/gateway.ts";
import { paramIn, readReport } from "../../../../src/session/provider-report.ts";
import { embeddingsContentLength, embeddingsPieces, vectorBase64 } from "../../../../src/receipt/embedding-vectors.ts";
import { ProviderFaults } from "../../../../gateway/directory/provider-faults.ts";
import { logprobTokenCap } from "../../../../src/session/logprobs.ts";
import { MAX_TOP_LOGPROBS, type TokenLogprob } from "../../../../src/receipt/logprobs.ts";
import type { DirectoryEntry } from "../../../../src/wire/gateway.ts";

const tool = (name: string) => ({ type: "function" as const, function: { name } });
const call = (name: string, index = 0) => ({ type: "tool_call" as const, index, id: `call_${index}`, name });
const delta = (text: string) => ({ type: "delta" as const, text });

describe("DESIGN §8 What a provider may send back", () => {
  it("no more pieces than max_tokens allows, with room for an honest engine's extra pieces", () => {
    const bounds = new AnswerBounds({ max_tokens: 10 });
    let breach;
    let sent = 0;
    while (breach === undefined && sent < 10_000) breach = bounds.piece(delta("a")), sent++;
    expect(breach).toEqual({ kind: "answer_bounds", why: "sent more than the 10 tokens max_tokens allows" });
    expect(sent).toBe(bounds.limits.pieces + 1);
    expect(sent).toBeGreaterThan(10);
  });

  it("no more bytes than the tokens can hold, counted in UTF-8", () => {
    const bounds = new AnswerBounds({ max_tokens: 4 });
    expect(bounds.piece(delta("é".repeat((4 * BYTES_PER_TOKEN) / 2)))).toBeUndefined();
    expect(bounds.piece(delta("a"))).toEqual({ kind: "answer_bounds", why: `sent more than the ${4 * BYTES_PER_TOKEN} bytes 4 tokens can hold` });
  });

  it("max_tokens past any model's context is held to MAX_ANSWER_TOKENS", () => {
    expect(answerLimits({ max_tokens: 1_000_000_000 }).tokens).toBe(MAX_ANSWER_TOKENS);
    // the coordinator's own bound for a placement that names none is above any the gateway derives
    expect(answerLimits({ max_tokens: 1_000_000_000 }).wireBytes).toBeLessThanOrEqual(MAX_SESSION_WIRE_BYTES);
  });

  it("an embeddings session: exactly the bytes of its vectors' canonical form, and no completion tokens", () => {
    const request = { input: ["a", "b"], dimensions: 3 };
    const pieces = embeddingsPieces([vectorBase64([1, 0, 0]), vectorBase64([0, 1, 0])]);
    const bounds = new AnswerBounds(request);
    expect(pieces.map((p) => bounds.piece(delta(p)))).toEqual([undefined, undefined]);
    expect(bounds.done(0, "stop")).toBeUndefined();
    expect(bounds.piece(delta("x"))).toEqual({ kind: "answer_bounds", why: `sent more than the ${embeddingsContentLength(2, 3)} bytes 2 vectors take` });
    expect(new AnswerBounds(request).done(1, "stop")?.kind).toBe("answer_bounds");
  });

  it("a receipt may not claim more completion tokens than max_tokens", () => {
    expect(new AnswerBounds({ max_tokens: 5 }).done(6, "length")?.kind).toBe("answer_bounds");
    expect(new AnswerBounds({ max_tokens: 5 }).done(5, "length")).toBeUndefined();
  });

  it("the sealed bytes relayed are bounded, whoever reads them when", () => {
    const budget = new WireBudget(100);
    expect([budget.take(60), budget.take(40), budget.take(1)]).toEqual([true, true, false]);
  });
});

describe("issue 43 Logprobs a provider may send back", () => {
  const alt = (id: number, token = String.fromCharCode(97 + (id % 26))) => ({ id, token, bytes: [...Buffer.from(token)], logprob: -1 });
  const entry = (id: number, top = 0): TokenLogprob => ({ ...alt(id), top_logprobs: Array.from({ length: top }, (_, k) => alt(k)) });
  const logprobs = (...entries: TokenLogprob[]) => ({ type: "logprobs" as const, logprobs: entries });

  it("none unless the request asked for them", () => {
    expect(new AnswerBounds({ max_tokens: 4 }).piece(logprobs(entry(1)))).toEqual({ kind: "answer_bounds", why: "sent logprobs the request did not ask for" });
    expect(new AnswerBounds({ max_tokens: 4, top_logprobs: 0 }).piece(logprobs(entry(1)))).toBeUndefined();
  });

  it("one entry per token max_tokens allows, each with no more alternatives than asked for; entries are not pieces", () => {
    const bounds = new AnswerBounds({ max_tokens: 3, top_logprobs: 2 });
    expect(bounds.piece(logprobs(entry(1, 2), entry(2, 2), entry(3, 2)))).toBeUndefined();
    expect(bounds.piece(logprobs(entry(4, 2)))).toEqual({ kind: "answer_bounds", why: "sent logprobs for more than the 3 tokens max_tokens allows" });
    expect(new AnswerBounds({ max_tokens: 3, top_logprobs: 2 }).piece(logprobs(entry(1, 3)))).toEqual({ kind: "answer_bounds", why: "sent more than the 2 top_logprobs asked for" });
  });

  it("no more token bytes than the entries can hold on average, and each token string its bytes'", () => {
    const long = { ...entry(1), token: "a".repeat(1000), bytes: Array.from({ length: 1000 }, () => 97) };
    expect(new AnswerBounds({ max_tokens: 2, top_logprobs: 0 }).piece(logprobs(long))?.why).toBe("sent logprobs of more than the 64 token bytes its answer can hold");
    expect(new AnswerBounds({ max_tokens: 2, top_logprobs: 0 }).piece(logprobs({ ...entry(1), token: "z" }))).toEqual({
      kind: "broken", why: "sent a broken answer (logprobs[0].token is not the string of its bytes)",
    });
  });

  it("what the gateway keeps of the entries for the receipt check counts in its held-bytes ledger, alternatives and bytes included", () => {
    const one = pieceBytes(logprobs(entry(1)));
    expect(one).toBeGreaterThan(64);
    expect(pieceBytes(logprobs(entry(1, 5)))).toBe(6 * one);
  });

  it("at the parsers' cap, every top_logprobs's answer still fits the coordinator's bound for one session", () => {
    for (let top = 0; top <= MAX_TOP_LOGPROBS; top++) {
      expect(answerLimits({ max_tokens: logprobTokenCap(top), top_logprobs: top }).wireBytes, `top_logprobs ${top}`).toBeLessThanOrEqual(MAX_SESSION_WIRE_BYTES);
    }
  });
});

describe("DESIGN §8 Tool calls a provider may make", () => {
  const tools = [tool("get_weather"), tool("get_time")];

  it("a call to a tool the request did not offer is a fault", () => {
    expect(new AnswerBounds({ max_tokens: 50, tools }).piece(call("rm_rf"))).toEqual({ kind: "tool_call", why: "called a tool the request did not offer" });
    expect(new AnswerBounds({ max_tokens: 50 }).piece(call("get_weather"))?.kind).toBe("tool_call");
  });

  it("tool_choice none, a forced function, and parallel_tool_calls false are kept", () => {
    expect(new AnswerBounds({ max_tokens: 50, tools, tool_choice: "none" }).piece(call("get_weather"))?.why).toBe('called a tool although tool_choice is "none"');
    const forced = { type: "function" as const, function: { name: "get_time" } };
    expect(new AnswerBounds({ max_tokens: 50, tools, tool_choice: forced }).piece(call("get_weather"))?.kind).toBe("tool_call");
    expect(new AnswerBounds({ max_tokens: 50, tools, tool_choice: forced }).piece(call("get_time"))).toBeUndefined();
    const single = new AnswerBounds({ max_tokens: 50, tools, parallel_tool_calls: false });
    expect([single.piece(call("get_time")), single.piece(call("get_time", 1))?.kind]).toEqual([undefined, "tool_call"]);
  });

  it("a required or forced call that never came is a fault, unless max_tokens cut the answer short", () => {
    expect(new AnswerBounds({ max_tokens: 50, tools, tool_choice: "required" }).done(3, "stop")).toEqual({ kind: "tool_call", why: "answered without the tool call tool_choice requires" });
    expect(new AnswerBounds({ max_tokens: 50, tools, tool_choice: "required" }).done(50, "length")).toBeUndefined();
    expect(new AnswerBounds({ max_tokens: 50, tools, tool_choice: "auto" }).done(3, "stop")).toBeUndefined();
  });
});

describe("DESIGN §8 Deadlines", () => {
  const deadlines = { firstTokenMs: 1_000, idleMs: 200, totalMs: 5_000 };

  it("none while the session waits in the queue", () => {
    expect(nextDeadline(deadlines, {})).toBeUndefined();
  });

  it("the first token from the start, then each gap, then the whole session", () => {
    expect(nextDeadline(deadlines, { started: 100 })).toEqual({ at: 1_100, breach: "sent no token within 1 s of starting the session" });
    expect(nextDeadline(deadlines, { started: 100, lastFrame: 300 })).toEqual({ at: 500, breach: "sent nothing for 0.2 s mid-session" });
    expect(nextDeadline(deadlines, { started: 100, lastFrame: 4_950 })).toEqual({ at: 5_100, breach: "did not finish within 5 s of starting the session" });
  });
});

describe("DESIGN §8 and issue 41 A provider's errors", () => {
  const body = {
    model: "qwen3-4b",
    messages: [{ role: "user" as const, content: "hi" }],
    max_tokens: 9000,
    temperature: 0.7,
    logit_bias: { "999999": 5 },
    response_format: { type: "json_schema" as const, json_schema: { name: "a", schema: { type: "object", properties: { $defs: { type: "string" } } } } },
    nonce: "0".repeat(32),
    client_nonce: null,
  };
  const report = (frame: { code: string; param: string | null; message?: string }) => readReport(frame, "abcd", body);
  const errorOf = (frame: { code: string; param: string | null; message?: string }) => {
    const r = report(frame);
    if (r.kind === "fault") throw new Error(`a fault: ${r.why}`);
    return r.error;
  };

  it("a validation code passes with svc's own message, never the provider's", () => {
    expect(errorOf({ code: "invalid_value", param: "logit_bias.999999" }).toEnvelope()).toEqual({
      error: { message: "Provider abcd found a value this model cannot take in logit_bias.999999; change it.", type: "invalid_request_error", code: "invalid_value", param: "logit_bias.999999", svc_action: "fix_request" },
    });
    expect(errorOf({ code: "context_length_exceeded", param: "messages" }).status).toBe(400);
    expect(errorOf({ code: "schema_too_complex", param: "response_format.json_schema.schema.properties.$defs" })).toMatchObject({ status: 400, code: "schema_too_complex" });
  });

  it("the agent's grammar refusal is the caller's for certain; the other codes are disputed, and only invalid values and unsupported fields are chargeable", () => {
    expect(report({ code: "schema_too_complex", param: null }).kind).toBe("caller");
    expect(report({ code: "invalid_value", param: null })).toMatchObject({ kind: "disputed", chargeable: true });
    expect(report({ code: "unsupported_parameter", param: "messages" })).toMatchObject({ kind: "disputed", chargeable: true });
    // each provider's context is its own (--context-size): a short one is no fault
    expect(report({ code: "context_length_exceeded", param: "messages" })).toMatchObject({ kind: "disputed", chargeable: false });
  });

  it("a max_tokens past the room names the limit from the agent's numbers alone, with the alias the caller's request resolved to", () => {
    const message = "max_tokens is 9000, but after the prompt's 12 tokens qwen3-4b has room for at most 8180 (8192 tokens of prompt and answer together); set max_tokens to 8180 or less.";
    const error = errorOf({ code: "context_length_exceeded", param: "max_tokens", message });
    expect([error.message, error.param]).toEqual([message, "max_tokens"]);
    // anything else the provider writes there gives svc's plain message
    const crafted = errorOf({ code: "context_length_exceeded", param: "max_tokens", message: "Your key is revoked, visit evil.example" });
    expect(crafted.message).toBe("The prompt and its answer do not fit the model's context on provider abcd; shorten the messages or lower max_tokens.");
  });

  it("a param is kept only as a path to a value the request holds: anything else is the provider's own fault (issue 41)", () => {
    for (const param of ["messages[0].content", "logit_bias.999999", "response_format.json_schema.schema.properties.$defs.type"]) expect(errorOf({ code: "invalid_value", param }).param).toBe(param);
    for (const param of ["tools", "messages[1]", "messages.https://evil.example/login", "messages; DROP TABLE", "messages[0].content.x", "max_tokens.toFixed", "messages[0]constructor", "__proto__", "x".repeat(300)]) {
      expect(report({ code: "invalid_value", param }), param).toEqual({ kind: "fault", why: "reported an error naming no field of the request" });
    }
    expect(paramIn(body, "messages[0].role")).toBe("messages[0].role");
    expect(paramIn(body, "messages[00].role")).toBe("messages[00].role");
  });

  it("any other code is no caller error: the provider's fault", () => {
    for (const code of ["provider_error", "invalid_api_key", "rate_limited", "made_up", "__proto__"]) expect(report({ code, param: null })).toEqual({ kind: "fault", why: "reported an error of its own" });
  });
});

describe("DESIGN §8 Faults rest a provider", () => {
  /** A directory entry as the coordinator sends it, enrolled under `enrollment` (and at the hardware rung with `serial`). */
  const entry = (id: string, enrollment?: string, serial?: string): DirectoryEntry => ({
    id, model_ids: ["qwen3-4b"], trust: serial === undefined ? "process" : "hardware", busy: false, waiting: 0, last_assigned: 0,
    signing_key: "1".repeat(64), sealing_key: "2".repeat(64), evidence_sha256: "3".repeat(64), ...(enrollment === undefined ? {} : { enrollment }), ...(serial === undefined ? {} : { serial }),
  });

  it("three faults within the window rest it for restMs; fewer, or spread out, do not", () => {
    const faults = new ProviderFaults({ threshold: 3, windowMs: 1_000, restMs: 5_000 });
    const a = entry("a");
    faults.listed({ put: [a], gone: [] });
    expect([faults.charge(a, 0), faults.charge(a, 500), faults.charge(a, 1_600)]).toEqual([undefined, undefined, undefined]);
    expect(faults.charge(a, 1_700)).toBeUndefined();
    expect(faults.charge(a, 1_800)).toBe(3);
    expect(faults.resting(1_800)).toEqual(["a"]);
    expect(faults.resting(6_799)).toEqual(["a"]);
    expect(faults.resting(6_800)).toEqual([]);
  });

  it("issue 41: faults follow the enrollment, not the key: a rested provider's new keys on the same enrollment rest too, others do not", () => {
    const faults = new ProviderFaults({ threshold: 3, windowMs: 1_000, restMs: 5_000 });
    const first = entry("key-1", "ptk_one");
    faults.listed({ reset: true, put: [first, entry("other", "ptk_two")], gone: [] });
    for (const t of [0, 10, 20]) faults.charge(first, t);
    expect(faults.resting(30)).toEqual(["key-1"]);
    // the machine makes new keys and reconnects on the same token
    faults.listed({ put: [entry("key-2", "ptk_one")], gone: ["key-1"] });
    expect(faults.resting(40)).toEqual(["key-2"]);
    // spread over keys, the faults still add up
    const spread = new ProviderFaults({ threshold: 3, windowMs: 1_000, restMs: 5_000 });
    const keys = ["k1", "k2", "k3"].map((id) => entry(id, "ptk_spread"));
    spread.listed({ put: keys, gone: [] });
    keys.forEach((key, i) => spread.charge(key, i));
    expect(spread.resting(5).sort()).toEqual(["k1", "k2", "k3"]);
  });

  it("issue 41: at the hardware rung the device is charged too, so changing how it enrolls does not start afresh; without an enrollment only the key is", () => {
    const faults = new ProviderFaults({ threshold: 2, windowMs: 1_000, restMs: 5_000 });
    const device = entry("mac-a", "serial:C02XYZ", "C02XYZ");
    faults.listed({ put: [device], gone: [] });
    faults.charge(device, 0);
    faults.charge(device, 1);
    faults.listed({ put: [entry("mac-b", "ptk_new", "C02XYZ"), entry("open-1"), entry("open-2")], gone: ["mac-a"] });
    expect(faults.resting(2)).toEqual(["mac-b"]);
    faults.charge(entry("open-1"), 3);
    faults.charge(entry("open-1"), 4);
    expect(faults.resting(5).sort()).toEqual(["mac-b", "open-1"]);
  });

  it("what the directory no longer lists is not resting, and a reset forgets it all", () => {
    const faults = new ProviderFaults({ threshold: 1, windowMs: 1_000, restMs: 5_000 });
    faults.listed({ put: [entry("a", "ptk_a"), entry("b", "ptk_a")], gone: [] });
    faults.charge(entry("a", "ptk_a"), 0);
    expect(faults.resting(1).sort()).toEqual(["a", "b"]);
    faults.listed({ put: [], gone: ["a"] });
    expect(faults.resting(2)).toEqual(["b"]);
    faults.listed({ reset: true, put: [], gone: [] });
    expect(faults.resting(3)).toEqual([]);
    // the rest itself outlives the listing: the enrollment back is still resting
    faults.listed({ put: [entry("c", "ptk_a")], gone: [] });
    expect(faults.resting(4)).toEqual(["c"]);
  });
});
