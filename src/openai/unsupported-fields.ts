// Request fields svc does not honour (yet) but will not silently drop: a value that would change the answer is
// a 400 `unsupported_parameter` naming the field; the value that changes nothing (n: 1, tools: []…) passes.
import { ApiError } from "../errors.ts";

interface Refusal {
  /** The values that ask for nothing beyond what svc does anyway; null always counts as absent. */
  harmless?: (value: unknown) => boolean;
  /** Why, and what to do instead. */
  why: string;
}

const isEmptyList = (value: unknown) => Array.isArray(value) && value.length === 0;
const is = (neutral: unknown) => (value: unknown) => value === neutral;
const LATER = "not supported yet; remove it";
const NEVER = "not supported; remove it";
const later: Refusal = { why: LATER };
const refused: Refusal = { why: NEVER };
/** Refused unless set to the value that switches it off. */
const unless = (neutral: unknown, why = NEVER): Refusal => ({ harmless: is(neutral), why });

/** Keyed by field name; a Map, so names such as `constructor` find nothing. */
const REFUSED = new Map<string, Refusal>(
  Object.entries({
    // OpenAI chat completions
    n: unless(1, "one choice per request is served; send n: 1 or leave it out"),
    // the deprecated forms of tools and tool_choice
    functions: { harmless: isEmptyList, why: "the deprecated functions field is not served; send tools instead" },
    function_call: unless("none", "the deprecated function_call field is not served; send tool_choice instead"),
    verbosity: later,
    modalities: {
      harmless: (value) => Array.isArray(value) && value.every((m) => m === "text"),
      why: 'only text is served; send ["text"] or leave it out',
    },
    audio: { why: "audio output is not supported; remove it" },
    web_search_options: { why: "web search is not supported; remove it" },
    // llama-server, vLLM and OpenRouter extensions that would change the answer
    mirostat: unless(0),
    typical_p: unless(1),
    tfs_z: unless(1),
    xtc_probability: unless(0),
    dry_multiplier: unless(0),
    dynatemp_range: unless(0),
    top_a: unless(0),
    samplers: refused,
    repeat_last_n: { why: "svc's penalties count every token of the answer so far; remove it" },
    penalty_last_n: { why: "svc's penalties count every token of the answer so far; remove it" },
    n_predict: { why: "send max_tokens instead" },
    ignore_eos: unless(false),
    min_tokens: unless(0),
    n_probs: unless(0, "send logprobs: true and top_logprobs instead"),
    best_of: unless(1),
    use_beam_search: unless(false),
    stop_token_ids: { harmless: isEmptyList, why: "send stop strings instead" },
    include_stop_str_in_output: unless(false, "the stop text is never returned; remove it"),
    grammar: later,
    json_schema: later,
    guided_json: later,
    guided_regex: later,
    guided_choice: later,
    guided_grammar: later,
    reasoning: { why: 'OpenRouter\'s reasoning object is not served; send reasoning_format "parsed" to get reasoning apart, or reasoning_effort "none" to turn it off' },
  } satisfies Record<string, Refusal>),
);

/** Message fields the model would need to see; `name` and `refusal` are ignored, as llama-server does. */
const REFUSED_IN_MESSAGES = new Map<string, Refusal>(
  Object.entries({
    function_call: { why: "the deprecated function_call is not served; send tool_calls instead" },
    audio: { why: "audio is not supported; remove it" },
  } satisfies Record<string, Refusal>),
);

/** The refused request field names (tests go through each). */
export const REFUSED_FIELDS: readonly string[] = [...REFUSED.keys()];

/**
 * Throws `unsupported_parameter` for the first field, in body order, set to a value svc cannot honour, then
 * for the first such field of a message. Only called on a body that parsed, so `messages` is a list of objects.
 */
export function refuseUnsupported(body: Record<string, unknown> & { messages: readonly object[] }): void {
  refuseIn(body, REFUSED, "");
  body.messages.forEach((message, i) => refuseIn(message as Record<string, unknown>, REFUSED_IN_MESSAGES, `messages[${i}].`));
}

function refuseIn(object: Record<string, unknown>, table: ReadonlyMap<string, Refusal>, path: string): void {
  for (const field of Object.keys(object)) {
    const refusal = table.get(field);
    const value = object[field];
    if (refusal === undefined || value === null || value === undefined) continue;
    if (refusal.harmless?.(value)) continue;
    throw new ApiError("unsupported_parameter", `${path}${field}: ${refusal.why}.`, { param: `${path}${field}` });
  }
}

/** The one `include` value POST /v1/responses serves: logprobs on each `output_text` (issue 43). */
export const LOGPROBS_INCLUDE = "message.output_text.logprobs";

/** POST /v1/responses: what needs a conversation kept at the gateway, which sealing rules out. */
export const NO_STATE =
  "svc keeps no conversation state: the answer is sealed between you and the provider, and the gateway holds no plaintext once it has answered; send the whole conversation in input";

/** The Responses fields svc does not honour; the chat-shaped ones (temperature, tools…) are read in responses-request.ts. */
const RESPONSES_REFUSED = new Map<string, Refusal>(
  Object.entries({
    previous_response_id: { why: NO_STATE },
    conversation: { why: NO_STATE },
    store: unless(false, `${NO_STATE}, with store: false or no store`),
    background: unless(false, "background responses need a stored response to poll; remove it"),
    prompt: { why: "stored prompt templates are not served; send instructions and input instead" },
    include: {
      harmless: (value) => Array.isArray(value) && value.every((v) => v === LOGPROBS_INCLUDE),
      why: `only ${JSON.stringify(LOGPROBS_INCLUDE)} is served (encrypted reasoning would need state svc does not keep); remove the rest`,
    },
    max_tool_calls: later,
    truncation: unless("disabled", 'svc never drops input to make it fit; send "disabled" or leave it out'),
    service_tier: { harmless: (value) => value === "auto" || value === "default", why: 'one service tier is served; send "auto" or leave it out' },
  } satisfies Record<string, Refusal>),
);

/** The refused Responses field names (tests go through each). */
export const RESPONSES_REFUSED_FIELDS: readonly string[] = [...RESPONSES_REFUSED.keys()];

/** Throws `unsupported_parameter` for the first Responses field, in body order, set to a value svc cannot honour. */
export function refuseUnsupportedResponses(body: Record<string, unknown>): void {
  refuseIn(body, RESPONSES_REFUSED, "");
}
