// The fields of a saved answer that the receipt does not cover, and what the verifier does with each. One list:
// RECEIPTS.md's table "Fields outside the receipt" is this list word for word (test/unit/src/receipt checks it).

/**
 * `free`: any value of the right type passes; `optional`: may be absent, but when present must agree with the
 * covered fields; `checked`: required and must agree with the receipt.
 */
export type OutsideRule = "free" | "optional" | "checked";

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
    where: "the stop chunk",
    rule: "free",
    check: "nothing but the type: the gateway's own step durations in ms",
  },
  {
    fields: ["x_svc_trust", "x_svc_model", "x_svc_provider"],
    where: "the stop chunk",
    rule: "checked",
    check: "present, and equal to the receipt's `trust_level`, `model_id` and `provider_id`",
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
];

