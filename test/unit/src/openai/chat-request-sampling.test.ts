// SPEC §2.1 beyond its table: the OpenAI sampling and length controls svc honours (parsed into what is sealed),
// and every other OpenAI request field, refused with 400 unsupported_parameter or accepted because it cannot
// change the answer. docs/api.md "OpenAI compatibility" lists the same decisions.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SAMPLING_FIELDS } from "../../../../src/session/sampling.ts";
import { REFUSED_FIELDS } from "../../../../src/openai/unsupported-fields.ts";
import { catchApiError } from "../../../fixtures/api-error.ts";
import { parse, sealedControls } from "../../../fixtures/chat-request.ts";

const base = { model: "qwen3-4b", messages: [{ role: "user", content: "hi" }] };
const sampling = (extra: Record<string, unknown>) => sealedControls({ ...base, ...extra });
const fault = (extra: Record<string, unknown>) => {
  const error = catchApiError(() => parse({ ...base, ...extra }));
  return [error.status, error.code, error.param];
};

describe("§2.1 sampling and length controls", () => {
  it("none set: nothing to seal, so today's requests seal the same bytes; null means not set", () => {
    expect(sampling({})).toEqual({});
    const nulls = ["stop", "top_p", "top_k", "min_p", "seed", "presence_penalty", "frequency_penalty", "repetition_penalty", "logit_bias"];
    expect(sampling(Object.fromEntries(nulls.map((f) => [f, null])))).toEqual({});
  });

  it("each set field is sealed as sent, defaults included (a caller's top_p 1 is still the caller's)", () => {
    const sent = { top_p: 1, top_k: 40, min_p: 0.05, seed: -7, presence_penalty: 2, frequency_penalty: -2, repetition_penalty: 1.1 };
    expect(sampling(sent)).toEqual(sent);
  });

  it("stop: a string becomes a list of one; up to 4; an empty list is no stop", () => {
    expect(sampling({ stop: "\n\n" })).toEqual({ stop: ["\n\n"] });
    expect(sampling({ stop: ["a", "b", "c", "d"] })).toEqual({ stop: ["a", "b", "c", "d"] });
    expect(sampling({ stop: [] })).toEqual({});
  });

  it("stop: a fifth string, an empty one, one over 256 characters, a lone surrogate or a non-string is refused naming it", () => {
    expect(fault({ stop: ["a", "b", "c", "d", "e"] })).toEqual([400, "invalid_value", "stop"]);
    expect(fault({ stop: ["a", ""] })).toEqual([400, "invalid_value", "stop[1]"]);
    expect(fault({ stop: "" })).toEqual([400, "invalid_value", "stop"]);
    expect(fault({ stop: "x".repeat(257) })).toEqual([400, "invalid_value", "stop"]);
    expect(sampling({ stop: "x".repeat(256) }).stop?.[0]).toHaveLength(256);
    expect(fault({ stop: ["ok", "\ud800"] })).toEqual([400, "invalid_value", "stop[1]"]);
    expect(fault({ stop: 5 })).toEqual([400, "invalid_type", "stop"]);
    expect(fault({ stop: ["a", 5] })).toEqual([400, "invalid_type", "stop[1]"]);
  });

  it("ranges: top_p and min_p 0..1, top_k ≥ 0, penalties -2..2, repetition_penalty above 0 up to 2", () => {
    const edges: [string, number, number][] = [
      ["top_p", 0, 1.01],
      ["top_p", 1, -0.1],
      ["min_p", 1, 1.5],
      ["top_k", 0, -1],
      ["presence_penalty", -2, -2.1],
      ["frequency_penalty", 2, 2.5],
      ["repetition_penalty", 2, 0],
      ["repetition_penalty", 0.01, 2.01],
    ];
    for (const [field, ok, bad] of edges) {
      expect(sampling({ [field]: ok }), `${field} ${ok}`).toEqual({ [field]: ok });
      expect(fault({ [field]: bad }), `${field} ${bad}`).toEqual([400, "invalid_value", field]);
    }
  });

  it("types: strings and booleans are refused; top_k and seed must be integers", () => {
    for (const field of ["top_p", "top_k", "min_p", "seed", "presence_penalty", "frequency_penalty", "repetition_penalty"]) {
      expect(fault({ [field]: "1" }), field).toEqual([400, "invalid_type", field]);
      expect(fault({ [field]: true }), field).toEqual([400, "invalid_type", field]);
    }
    expect(fault({ top_k: 2.5 })).toEqual([400, "invalid_type", "top_k"]);
    expect(fault({ seed: 1.5 })).toEqual([400, "invalid_type", "seed"]);
  });

  it("seed: any integer JSON can carry exactly; beyond 2^53 it is refused rather than rounded", () => {
    expect(sampling({ seed: Number.MAX_SAFE_INTEGER })).toEqual({ seed: Number.MAX_SAFE_INTEGER });
    expect(sampling({ seed: -1 })).toEqual({ seed: -1 });
    expect(fault({ seed: 2 ** 63 })).toEqual([400, "invalid_value", "seed"]);
  });

  it("repeat_penalty (llama-server's name) is repetition_penalty; two different values are refused", () => {
    expect(sampling({ repeat_penalty: 1.2 })).toEqual({ repetition_penalty: 1.2 });
    expect(sampling({ repeat_penalty: 1.2, repetition_penalty: 1.2 })).toEqual({ repetition_penalty: 1.2 });
    expect(fault({ repeat_penalty: 1.2, repetition_penalty: 1.3 })).toEqual([400, "invalid_value", "repeat_penalty"]);
    expect(fault({ repeat_penalty: 3 })).toEqual([400, "invalid_value", "repeat_penalty"]);
  });

  it("logit_bias: token ids as decimal keys, values -100..100, at most 300; an empty map is no bias", () => {
    expect(sampling({ logit_bias: { "0": -100, "151645": 100, "42": 0.5 } })).toEqual({ logit_bias: { "0": -100, "151645": 100, "42": 0.5 } });
    expect(sampling({ logit_bias: {} })).toEqual({});
    const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [String(i), 1]));
    expect(Object.keys(sampling({ logit_bias: many(300) }).logit_bias!)).toHaveLength(300);
    expect(fault({ logit_bias: many(301) })).toEqual([400, "invalid_value", "logit_bias"]);
  });

  it("logit_bias: a key that is not a token id, a value out of range or not a number is refused naming the key", () => {
    for (const key of ["x", "-1", "1.5", "01", "1e3", " 1"]) expect(fault({ logit_bias: { [key]: 1 } }), key).toEqual([400, "invalid_value", `logit_bias.${key}`]);
    expect(fault({ logit_bias: { "7": 101 } })).toEqual([400, "invalid_value", "logit_bias.7"]);
    expect(fault({ logit_bias: { "7": -100.5 } })).toEqual([400, "invalid_value", "logit_bias.7"]);
    expect(fault({ logit_bias: { "7": "1" } })).toEqual([400, "invalid_type", "logit_bias.7"]);
    expect(fault({ logit_bias: [1] })).toEqual([400, "invalid_type", "logit_bias"]);
  });
});

describe("§2.1 logprobs (issue 43): logprobs true with top_logprobs 0–20, sealed as top_logprobs", () => {
  it("logprobs true seals top_logprobs (0 when unset); false, null or absent seals nothing", () => {
    expect(sampling({ logprobs: true })).toEqual({ top_logprobs: 0 });
    expect(sampling({ logprobs: true, top_logprobs: 20 })).toEqual({ top_logprobs: 20 });
    for (const off of [{ logprobs: false }, { logprobs: null, top_logprobs: null }, { top_logprobs: 0 }]) expect(sampling(off), JSON.stringify(off)).toEqual({});
  });

  it("alternatives without logprobs true would be dropped unseen, so they are a 400 naming top_logprobs; 21 is out of range", () => {
    expect(fault({ top_logprobs: 3 })).toEqual([400, "invalid_value", "top_logprobs"]);
    expect(fault({ logprobs: false, top_logprobs: 1 })).toEqual([400, "invalid_value", "top_logprobs"]);
    expect(fault({ logprobs: true, top_logprobs: 21 })).toEqual([400, "invalid_value", "top_logprobs"]);
    expect(fault({ logprobs: "yes" })).toEqual([400, "invalid_type", "logprobs"]);
  });

  it("an answer's entries are bounded: max_tokens × (1 + top_logprobs) within 65,536, else a 400 naming the length field", () => {
    expect(sampling({ logprobs: true, top_logprobs: 20, max_tokens: 3120 })).toEqual({ top_logprobs: 20 });
    expect(fault({ logprobs: true, top_logprobs: 20, max_tokens: 3121 })).toEqual([400, "invalid_value", "max_tokens"]);
    expect(fault({ logprobs: true, top_logprobs: 20, max_completion_tokens: 3121 })).toEqual([400, "invalid_value", "max_completion_tokens"]);
    expect(fault({ logprobs: true, max_tokens: 65_537 })).toEqual([400, "invalid_value", "max_tokens"]);
    // without logprobs the bound is not this one
    expect(() => parse({ ...base, max_tokens: 65_537 })).not.toThrow();
  });
});

describe("§2.1 OpenAI fields svc does not honour: refused, never silently dropped", () => {
  const refused = (extra: Record<string, unknown>, param: string) => expect(fault(extra)).toEqual([400, "unsupported_parameter", param]);

  it("n > 1 is refused naming n; n 1 is served; n 0 or a fraction is malformed", () => {
    refused({ n: 2 }, "n");
    expect(sealedControls({ ...base, n: 1 })).toEqual({});
    expect(fault({ n: 0 })).toEqual([400, "invalid_value", "n"]);
    expect(fault({ n: 1.5 })).toEqual([400, "invalid_type", "n"]);
  });


  it("the deprecated functions and function_call are refused unless they ask for nothing (tools: chat-request-tools)", () => {
    refused({ functions: [{ name: "f" }] }, "functions");
    refused({ function_call: "auto" }, "function_call");
    expect(() => parse({ ...base, tools: [], tool_choice: "none", functions: [], function_call: "none" })).not.toThrow();
  });

  it("verbosity, audio, web search and audio modalities are refused (response_format: chat-request-structured)", () => {
    refused({ verbosity: "low" }, "verbosity");
    refused({ audio: { voice: "alloy", format: "wav" } }, "audio");
    refused({ web_search_options: {} }, "web_search_options");
    refused({ modalities: ["text", "audio"] }, "modalities");
    expect(() => parse({ ...base, response_format: { type: "text" }, modalities: ["text"] })).not.toThrow();
  });

  it("llama-server, vLLM and OpenRouter knobs that would change the answer are refused; their off values pass", () => {
    refused({ mirostat: 2 }, "mirostat");
    refused({ typical_p: 0.9 }, "typical_p");
    refused({ ignore_eos: true }, "ignore_eos");
    refused({ grammar: "root ::= \"a\"" }, "grammar");
    refused({ repeat_last_n: 64 }, "repeat_last_n");
    refused({ n_predict: 8 }, "n_predict");
    refused({ min_tokens: 4 }, "min_tokens");
    refused({ reasoning: { effort: "high" } }, "reasoning");
    expect(() => parse({ ...base, mirostat: 0, typical_p: 1, ignore_eos: false, min_tokens: 0, best_of: 1 })).not.toThrow();
  });

  it("in messages: function_call and audio are refused naming the message; name and refusal are ignored", () => {
    const assistant = (extra: Record<string, unknown>) => ({ ...base, messages: [{ role: "user", content: "hi" }, { role: "assistant", content: "", ...extra }] });
    expect(catchApiError(() => parse(assistant({ function_call: { name: "f", arguments: "{}" } }))).param).toBe("messages[1].function_call");
    expect(catchApiError(() => parse(assistant({ audio: { id: "a1" } }))).code).toBe("unsupported_parameter");
    expect(parse(assistant({ tool_calls: [], name: "bot", refusal: null })).body.messages[1]).toEqual({ role: "assistant", content: "" });
  });

  it("the first refused field in body order is the one named; null means not sent", () => {
    refused({ functions: [{}], n: 3 }, "functions");
    expect(() => parse({ ...base, tools: null, n: null, logprobs: null, response_format: null })).not.toThrow();
  });

  it("a malformed body is reported before an unsupported field", () => {
    expect(fault({ functions: [{}], temperature: "hot" })).toEqual([400, "invalid_type", "temperature"]);
  });

  it("every refused field is refused with its own name", () => {
    for (const field of REFUSED_FIELDS) expect(fault({ [field]: { surely: "not neutral" } })[2], field).toBe(field);
  });
});

describe("§2.1 OpenAI fields accepted and ignored: they cannot change the answer", () => {
  it("user, metadata, store, service_tier, prediction, safety_identifier and unknown keys pass", () => {
    const ignored = {
      user: "u-1",
      metadata: { team: "a" },
      store: true,
      service_tier: "flex",
      prediction: { type: "content", content: "hello" },
      safety_identifier: "s",
      some_future_field: { x: 1 },
    };
    expect(parse({ ...base, ...ignored })).toEqual(parse(base));
  });

  it("user, metadata and store still need their OpenAI types", () => {
    expect(fault({ user: 5 })).toEqual([400, "invalid_type", "user"]);
    expect(fault({ metadata: { a: 1 } })).toEqual([400, "invalid_type", "metadata.a"]);
    expect(fault({ store: "yes" })).toEqual([400, "invalid_type", "store"]);
  });
});

describe("docs/api.md OpenAI compatibility", () => {
  it("lists every honoured sampling control and every refused field", () => {
    const page = readFileSync(join(import.meta.dirname, "../../../..", "docs", "api.md"), "utf8");
    const start = page.indexOf("\n## OpenAI compatibility\n");
    // the section and its ### parts (structured output, tool calling, reasoning), up to the next ## heading
    const section = page.slice(start, page.indexOf("\n## ", start + 1));
    expect(start).toBeGreaterThan(0);
    expect(section).toContain("### Reasoning");
    const tooling = ["tools", "tool_choice", "parallel_tool_calls", "reasoning_format", "reasoning_effort", "chat_template_kwargs"];
    for (const field of [...SAMPLING_FIELDS, ...tooling, ...REFUSED_FIELDS]) expect(section, field).toContain(`\`${field}\``);
  });
});
