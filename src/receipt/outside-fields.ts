// The fields of a saved answer that the receipt does not cover, and what the verifier does with each. One list:
// RECEIPTS.md's table "Fields outside the receipt" is this list word for word (test/unit/src/receipt checks it).

/**
 * `free`: any value of the right type passes; `optional`: may be absent, but when present must agree with the
 * covered fields; `null`: may be absent or `null` and nothing else (what an SDK writes for something svc never
 * produces); `checked`: required and must agree with the receipt.
 */
export type OutsideRule = "free" | "optional" | "null" | "checked";

export interface OutsideField {
  /** Paths inside one response body or one chunk; `[]` is any array element. */
  fields: readonly string[];
  where: string;
  rule: OutsideRule;
  /** What the verifier checks, in RECEIPTS.md's words. */
  check: string;
}

export const OUTSIDE_THE_RECEIPT: readonly OutsideField[] = [
  {
    fields: ["id", "created", "model"],
    where: "the response, every chunk",
    rule: "free",
    check: "nothing but the type (string, integer, string); in a stream, the same in every chunk",
  },
  {
    fields: ["x_svc_timing"],
    where: "the stop chunk; a response saved from openai-node's `chat.completions.stream().finalChatCompletion()`",
    rule: "free",
    check: "nothing but the type: the gateway's own step durations in ms",
  },
  {
    fields: ["x_svc_trust", "x_svc_model", "x_svc_provider"],
    where: "the stop chunk; a response saved from openai-node's `chat.completions.stream().finalChatCompletion()`",
    rule: "checked",
    check: "present on the stop chunk (on a response, all three or none), and equal to the receipt's `trust_level`, `model_id` and `provider_id`",
  },
  {
    fields: ["choices[].message.parsed"],
    where: "a response saved from the openai SDK's `parse()`",
    rule: "optional",
    check: "absent, `null`, or the JSON value of `content`",
  },
  {
    fields: ["choices[].message.tool_calls[].function.parsed_arguments"],
    where: "a response saved from the openai SDK's `parse()`",
    rule: "optional",
    check: "absent, `null`, or the JSON value of that call's `arguments`",
  },
  {
    fields: ["choices[].message.refusal"],
    where: "a response saved from openai-node's `chat.completions.stream().finalChatCompletion()` or openai-python's `model_dump_json()`",
    rule: "null",
    check: "absent or `null`: svc refuses nothing",
  },
  {
    fields: ["choices[].logprobs"],
    where: "a chat answer; openai-node's `chat.completions.stream().finalChatCompletion()` and openai-python's `model_dump_json()` write it `null` when no logprobs were asked for",
    rule: "optional",
    check: "absent or `null`: not shown (a v4 receipt then covers logprobs the answer does not show, as a gateway run with `--audit` seals them on every request: the verifier says \"committed, not shown\"); else `{content, refusal: null}` under a v4 receipt, its `content` what `logprobs_sha256` covers",
  },
  {
    fields: ["choices[].logprobs.refusal"],
    where: "a chat answer with logprobs, and every chunk of its stream that carries them",
    rule: "checked",
    check: "`null`: svc refuses nothing",
  },
  {
    fields: ["choices[].logprobs.tokens", "choices[].logprobs.token_logprobs", "choices[].logprobs.top_logprobs", "choices[].logprobs.text_offset"],
    where: "a legacy completion with logprobs, and every event of its stream that carries them",
    rule: "checked",
    check: "exactly what the entries in `choices[].logprobs.content` give (OpenAI's legacy arrays, counted across a stream), which the receipt covers",
  },
  {
    fields: ["choices[].message.tool_calls"],
    where: "a response saved from openai-python's `model_dump_json()` or `parse().to_json()`",
    rule: "null",
    check: "`null` only in an answer without tool calls (the receipt's `tool_calls_sha256` is null)",
  },
  {
    fields: [
      "metadata", "moderation", "service_tier", "system_fingerprint", "choices[].message.annotations", "choices[].message.audio", "choices[].message.function_call",
      "usage.completion_tokens_details", "usage.prompt_tokens_details",
      "usage.completion_tokens_details.accepted_prediction_tokens", "usage.completion_tokens_details.audio_tokens", "usage.completion_tokens_details.rejected_prediction_tokens", "usage.completion_tokens_details.text_tokens",
      "usage.prompt_tokens_details.audio_tokens", "usage.prompt_tokens_details.cache_write_tokens", "usage.prompt_tokens_details.image_tokens", "usage.prompt_tokens_details.text_tokens",
    ],
    where: "a response saved from openai-python's `model_dump_json()`, which writes every field of its models",
    rule: "null",
    check: "absent or `null`: what svc never returns; `usage`'s details `null` only where the receipt has no such count",
  },
  {
    fields: ["id", "created_at", "output[].id", "instructions", "max_output_tokens", "parallel_tool_calls", "reasoning", "temperature", "text", "tool_choice", "tools", "top_p", "metadata", "user"],
    where: "a Responses response",
    rule: "free",
    check: "nothing but the type: the response's and items' ids, and the request's fields echoed",
  },
  {
    fields: ["output_text"],
    where: "a Responses response saved from the openai SDK",
    rule: "optional",
    check: "absent, or every `output_text` of the message items joined",
  },
  {
    fields: ["output[].content[].logprobs"],
    where: "a Responses answer's `output_text` parts",
    rule: "optional",
    check: "absent on every part: not shown (\"committed, not shown\" under a v4 receipt, as for `choices[].logprobs`); else the parts' lists, joined, are what `content_logprobs_sha256` covers",
  },
  {
    fields: ["output[].content[].parsed"],
    where: "a Responses response saved from openai-node's `responses.parse()` or `responses.stream().finalResponse()`",
    rule: "optional",
    check: "absent, `null`, or, where `text.format.type` is `json_schema`, the JSON value of that part's `text`",
  },
  {
    fields: ["output[].parsed_arguments"],
    where: "the same, on a `function_call` item",
    rule: "optional",
    check: "absent, `null`, or the JSON value of that call's `arguments`",
  },
  {
    fields: ["output_parsed"],
    where: "the same",
    rule: "optional",
    check: "absent, or the first `parsed` of the message items that is not `null` (`null` when none is)",
  },
];

