// The body of POST /v1/responses (OpenAI's Responses API, stateless subset), translated into the chat request
// the rest of svc already serves: its shape is checked here, then the chat parser (chat-request.ts) does every
// other check on the translation, and a fault it finds is renamed to the Responses field the caller sent.
import * as z from "zod";
import { ApiError } from "../errors.ts";
import { MAX_TOOLS } from "../session/tools.ts";
import { firstIssue } from "../validation.ts";
import { issueError, MAX_MESSAGES, parseChatRequest, type ChatContext, type ChatRequest } from "./chat-request.ts";
import { LOGPROBS_INCLUDE, NO_STATE, refuseUnsupportedResponses } from "./unsupported-fields.ts";
import { MAX_TOP_LOGPROBS } from "../receipt/logprobs.ts";

/** Items merge (a message and its calls make one chat message), so the chat parser's message bound is the real one. */
export const MAX_INPUT_ITEMS = 4 * MAX_MESSAGES;

const Part = z.looseObject({ type: z.string(), text: z.string().optional() });
const Content = z.union([z.string(), z.array(Part)]);
const Item = z.looseObject({ type: z.string().optional() });
const Body = z.object({
  model: z.string().nullish(),
  input: z.union([z.string(), z.array(Item).min(1).max(MAX_INPUT_ITEMS)]),
  instructions: z.string().nullish(),
  max_output_tokens: z.int().positive().nullish(),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  stream: z.boolean().nullish(),
  tools: z.array(z.looseObject({ type: z.string() })).max(MAX_TOOLS).nullish(),
  tool_choice: z.union([z.enum(["auto", "none", "required"]), z.looseObject({ type: z.string(), name: z.string().optional() })]).nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  text: z.object({ format: z.looseObject({ type: z.enum(["text", "json_object", "json_schema"]) }).nullish(), verbosity: z.enum(["low", "medium", "high"]).nullish() }).nullish(),
  reasoning: z.object({ effort: z.enum(["none", "minimal", "low", "medium", "high", "xhigh"]).nullish(), summary: z.enum(["auto", "concise", "detailed"]).nullish() }).nullish(),
  /** Values other than LOGPROBS_INCLUDE are refused in unsupported-fields.ts. */
  include: z.array(z.string()).nullish(),
  /** Alternatives per position, returned only with `include: ["message.output_text.logprobs"]`, as OpenAI does. */
  top_logprobs: z.int().min(0).max(MAX_TOP_LOGPROBS).nullish(),
  // accepted and ignored, as on chat: they cannot change the answer
  metadata: z.record(z.string(), z.string()).nullish(),
  user: z.string().nullish(),
});
type Body = z.infer<typeof Body>;

const MessageItem = z.object({ role: z.enum(["user", "system", "developer", "assistant"]), content: Content });
const FunctionCall = z.object({ call_id: z.string(), name: z.string(), arguments: z.string() });
const FunctionCallOutput = z.object({ call_id: z.string(), output: Content });
const Reasoning = z.object({ content: z.array(z.object({ type: z.literal("reasoning_text"), text: z.string() })).nullish() });
const FunctionTool = z.object({ name: z.string(), description: z.string().nullish(), parameters: z.record(z.string(), z.unknown()).nullish(), strict: z.boolean().nullish() });
const JsonSchemaFormat = z.object({ name: z.string(), description: z.string().nullish(), schema: z.record(z.string(), z.unknown()).nullish(), strict: z.boolean().nullish() });

/** svc's own request fields (sampling, pinning), read as on chat. */
const EXTENSIONS = ["seed", "top_k", "min_p", "stop", "presence_penalty", "frequency_penalty", "repetition_penalty", "repeat_penalty", "logit_bias", "provider", "provider_key_id", "prompt_cache_key", "cache_prompt"] as const;

/** What the response object echoes of the request, as OpenAI's does. */
export interface ResponsesEcho {
  instructions: string | null;
  max_output_tokens: number | null;
  parallel_tool_calls: boolean;
  reasoning: { effort: string | null; summary: null };
  temperature: number;
  top_p: number | null;
  text: { format: Record<string, unknown> };
  tool_choice: unknown;
  tools: unknown[];
  metadata: Record<string, string>;
  user: string | null;
}

export interface ResponsesRequest {
  chat: ChatRequest;
  echo: ResponsesEcho;
}

type ChatMessage = Record<string, unknown> & { role: string };
const parse = <T>(schema: z.ZodType<T>, value: unknown, path: (string | number)[]): T => {
  const parsed = schema.safeParse(value, { reportInput: true });
  if (parsed.success) return parsed.data;
  const issue = firstIssue(parsed.error);
  throw issueError({ ...issue, path: [...path, ...issue.path] });
};

/** Validates the body, refuses what svc cannot honour, and returns the chat request it means (or its 400). */
export function parseResponsesRequest(body: unknown, context: ChatContext): ResponsesRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new ApiError("invalid_type", "The request body must be a JSON object.");
  const b = parse(Body, body, []);
  refuseUnsupportedResponses(body as Record<string, unknown>);
  if (b.text?.verbosity != null && b.text.verbosity !== "medium") {
    throw new ApiError("unsupported_parameter", 'text.verbosity: not supported yet; send "medium" or leave it out.', { param: "text.verbosity" });
  }
  const { messages, sources } = messagesOf(b);
  const chatBody: Record<string, unknown> = {
    model: b.model,
    messages,
    max_tokens: b.max_output_tokens,
    temperature: b.temperature,
    top_p: b.top_p,
    stream: b.stream,
    tools: b.tools?.map((tool, i) => chatTool(tool, i)),
    tool_choice: chatToolChoice(b.tool_choice),
    parallel_tool_calls: b.parallel_tool_calls,
    response_format: chatResponseFormat(b.text?.format),
    // OpenAI never mixes reasoning into output_text: the think block always comes back apart, as a reasoning item
    reasoning_format: "parsed",
    reasoning_effort: b.reasoning?.effort,
    // OpenAI returns logprobs only when `include` asks for them; `top_logprobs` alone asks for nothing
    ...(b.include?.includes(LOGPROBS_INCLUDE) ? { logprobs: true, top_logprobs: b.top_logprobs ?? 0 } : {}),
  };
  for (const field of EXTENSIONS) chatBody[field] = (body as Record<string, unknown>)[field];
  let chat: ChatRequest;
  try {
    chat = parseChatRequest(chatBody, context);
  } catch (err) {
    throw err instanceof ApiError ? renamed(err, sources) : err;
  }
  const echo: ResponsesEcho = {
    instructions: b.instructions ?? null,
    max_output_tokens: b.max_output_tokens ?? null,
    parallel_tool_calls: b.parallel_tool_calls ?? true,
    reasoning: { effort: b.reasoning?.effort ?? null, summary: null },
    temperature: chat.body.temperature,
    top_p: b.top_p ?? null,
    text: { format: b.text?.format ?? { type: "text" } },
    tool_choice: b.tool_choice ?? "auto",
    tools: b.tools ?? [],
    metadata: b.metadata ?? {},
    user: b.user ?? null,
  };
  return { chat, echo };
}

/** The chat messages the input means, and for each the Responses field it came from (to name it in a fault). */
function messagesOf(b: Body): { messages: ChatMessage[]; sources: string[] } {
  const messages: ChatMessage[] = [];
  const sources: string[] = [];
  const push = (message: ChatMessage, source: string) => (messages.push(message), sources.push(source));
  if (b.instructions != null) push({ role: "system", content: b.instructions }, "instructions");
  if (typeof b.input === "string") {
    push({ role: "user", content: b.input }, "input");
    return { messages, sources };
  }
  let reasoning: string | undefined;
  // the assistant message of the current turn, which the function calls after it join
  let turn: ChatMessage | undefined;
  b.input.forEach((item, k) => {
    const at = `input[${k}]`;
    const type = item.type ?? "message";
    if (type === "message") {
      const m = parse(MessageItem, item, ["input", k]);
      const content = textOf(m.content, m.role === "assistant" ? ["output_text", "refusal"] : ["input_text"], `${at}.content`);
      turn = undefined;
      if (m.role !== "assistant") return push({ role: m.role, content }, at);
      turn = { role: "assistant", content, ...(reasoning === undefined ? {} : { reasoning_content: reasoning }) };
      reasoning = undefined;
      return push(turn, at);
    }
    if (type === "function_call") {
      const call = parse(FunctionCall, item, ["input", k]);
      const entry = { id: call.call_id, type: "function", function: { name: call.name, arguments: call.arguments } };
      if (turn === undefined) {
        turn = { role: "assistant", content: null, tool_calls: [], ...(reasoning === undefined ? {} : { reasoning_content: reasoning }) };
        reasoning = undefined;
        push(turn, at);
      }
      ((turn.tool_calls ??= []) as unknown[]).push(entry);
      return;
    }
    turn = undefined;
    if (type === "function_call_output") {
      const out = parse(FunctionCallOutput, item, ["input", k]);
      return push({ role: "tool", tool_call_id: out.call_id, content: textOf(out.output, ["input_text", "output_text"], `${at}.output`) }, at);
    }
    if (type === "reasoning") {
      const text = (parse(Reasoning, item, ["input", k]).content ?? []).map((part) => part.text).join("");
      if (text !== "") reasoning = (reasoning ?? "") + text;
      return;
    }
    if (type === "item_reference") throw new ApiError("unsupported_parameter", `${at}: an item_reference points at a stored item, and ${NO_STATE}.`, { param: at });
    throw new ApiError("unsupported_parameter", `${at}.type: input items of type ${JSON.stringify(type)} are not supported; send messages, function_call and function_call_output items.`, {
      param: `${at}.type`,
    });
  });
  return { messages, sources };
}

/** A message's text: a string, or its text parts joined with a line between them (as chat joins them). */
function textOf(content: z.infer<typeof Content>, types: readonly string[], at: string): string {
  if (typeof content === "string") return content;
  return content
    .map((part, j) => {
      if (!types.includes(part.type)) {
        throw new ApiError("unsupported_content_part", `${at}[${j}].type: content parts of type ${JSON.stringify(part.type)} are not supported here; send ${types.map((t) => `"${t}"`).join(" or ")} parts.`, {
          param: `${at}[${j}].type`,
        });
      }
      if (part.text === undefined) throw new ApiError("missing_field", `${at}[${j}].text is required.`, { param: `${at}[${j}].text` });
      return part.text;
    })
    .join("\n");
}

function chatTool(tool: { type: string }, i: number) {
  if (tool.type !== "function") {
    throw new ApiError("unsupported_parameter", `tools[${i}]: the hosted tool ${JSON.stringify(tool.type)} is not served; svc runs function tools only, so remove it.`, { param: `tools[${i}].type` });
  }
  const { name, description, parameters, strict } = parse(FunctionTool, tool, ["tools", i]);
  return { type: "function", function: { name, description, parameters, strict } };
}

function chatToolChoice(choice: Body["tool_choice"]) {
  if (choice == null || typeof choice === "string") return choice;
  if (choice.type === "function" && typeof choice.name === "string") return { type: "function", function: { name: choice.name } };
  const what = choice.type === "function" ? "a function tool_choice needs a name" : `tool_choice of type ${JSON.stringify(choice.type)} is not served`;
  throw new ApiError("unsupported_parameter", `tool_choice: ${what}; send "auto", "none", "required" or {type: "function", name}.`, { param: "tool_choice" });
}

function chatResponseFormat(format: NonNullable<Body["text"]>["format"]) {
  if (format == null || format.type !== "json_schema") return format;
  return { type: "json_schema", json_schema: parse(JsonSchemaFormat, format, ["text", "format"]) };
}

/** The chat parser's names for the fields the caller sent under their Responses names. */
const RENAMES: [RegExp, string][] = [
  [/^max_tokens$/, "max_output_tokens"],
  [/^response_format\.json_schema/, "text.format"],
  [/^response_format/, "text.format"],
  [/^tools\[(\d+)\]\.function/, "tools[$1]"],
  [/^tool_choice\.function/, "tool_choice"],
  [/^reasoning_effort$/, "reasoning.effort"],
  [/^messages$/, "input"],
];

/** A fault in chat's words (the parser's, or a provider's about the sealed request) in the Responses field names. */
export function renamed(err: ApiError, sources: readonly string[] = []): ApiError {
  const old = err.param;
  if (old === null) return err;
  let param = RENAMES.reduce((p, [from, to]) => p.replace(from, to), old);
  const message = /^messages\[(\d+)\](\.content.*)?/.exec(old);
  if (message) {
    const source = sources[Number(message[1])] ?? "input";
    param = source.startsWith("input[") && message[2] !== undefined ? `${source}${message[2]}` : source;
  }
  if (param === old) return err;
  return new ApiError(err.code, err.message.split(old).join(param), { param, svcAction: err.svcAction });
}
