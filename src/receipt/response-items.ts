// The Responses API's output items (POST /v1/responses) and the answer a receipt covers, in both directions
// (RECEIPTS.md "Responses"): the gateway lays the answer's pieces out as items, and a verifier reads the content,
// tool calls and reasoning back out of them. Portable: part of the verifier in src/receipt/index.ts.
import * as z from "zod";
import { MAX_CALL_ID_LENGTH, MAX_TOOL_CALLS, type ToolCall } from "./answer-record.ts";
import { TokenLogprobSchema, type TokenLogprob } from "./logprobs.ts";
import type { FinishReason, ReportedUsage } from "./types.ts";

const ItemStatus = z.enum(["completed", "incomplete"]);

export const ReasoningItemSchema = z.strictObject({
  type: z.literal("reasoning"),
  id: z.string(),
  status: ItemStatus,
  // svc returns the think block whole, never a summary
  summary: z.tuple([]),
  content: z.tuple([z.strictObject({ type: z.literal("reasoning_text"), text: z.string().min(1) })]),
});
/** `logprobs` when the request included them (a v4 receipt's `content_logprobs_sha256` covers them, joined over the items). */
export const OutputTextSchema = z.strictObject({ type: z.literal("output_text"), text: z.string(), annotations: z.tuple([]), logprobs: z.array(TokenLogprobSchema).optional() });
export const MessageItemSchema = z.strictObject({
  type: z.literal("message"),
  id: z.string(),
  status: ItemStatus,
  role: z.literal("assistant"),
  content: z.tuple([OutputTextSchema]),
});
export const FunctionCallItemSchema = z.strictObject({
  type: z.literal("function_call"),
  id: z.string(),
  status: ItemStatus,
  call_id: z.string().min(1).max(MAX_CALL_ID_LENGTH),
  name: z.string(),
  arguments: z.string(),
});
export const OutputItemSchema = z.discriminatedUnion("type", [ReasoningItemSchema, MessageItemSchema, FunctionCallItemSchema]);
export type ReasoningItem = z.infer<typeof ReasoningItemSchema>;
export type MessageItem = z.infer<typeof MessageItemSchema>;
export type FunctionCallItem = z.infer<typeof FunctionCallItemSchema>;
export type OutputItem = z.infer<typeof OutputItemSchema>;

/** The Responses `usage` object; cached_tokens is a v3 receipt's (OpenAI's `input_tokens_details`). */
export const ResponsesUsageSchema = z.strictObject({
  input_tokens: z.int().min(0),
  input_tokens_details: z.strictObject({ cached_tokens: z.int().min(0) }),
  output_tokens: z.int().min(0),
  output_tokens_details: z.strictObject({ reasoning_tokens: z.int().min(0) }),
  total_tokens: z.int().min(0),
});
export type ResponsesUsage = z.infer<typeof ResponsesUsageSchema>;

export function responsesUsage(usage: ReportedUsage): ResponsesUsage {
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: { cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0 },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: usage.completion_tokens_details?.reasoning_tokens ?? 0 },
    total_tokens: usage.total_tokens,
  };
}

/** `status` of a response: a receipt's `length` is OpenAI's incomplete answer (`max_output_tokens`). */
export const statusOf = (finish: FinishReason): "completed" | "incomplete" => (finish === "length" ? "incomplete" : "completed");

/** What the items say the receipt covers: content, tool calls and reasoning, and the finish reason. */
export interface ItemsAnswer {
  content: string;
  /** Every `output_text`'s logprobs, joined in order; undefined when no `output_text` shows them (not asked for). */
  contentLogprobs: TokenLogprob[] | undefined;
  toolCalls: ToolCall[];
  reasoning: string | null;
  finishReason: FinishReason;
}

/**
 * Reads the answer out of the items, or says why they are not a layout the gateway makes: every text in
 * order joined, the calls in order, and the rule that makes the layout one per answer (reasoning only first, a run of
 * text one item; an empty message, last, only for an answer with no other text and no call; every item completed but an incomplete last).
 */
export function answerOfItems(items: readonly OutputItem[], status: "completed" | "incomplete"): ItemsAnswer | { problem: string } {
  let content = "";
  let reasoning: string | null = null;
  const toolCalls: ToolCall[] = [];
  const contentLogprobs: TokenLogprob[] = [];
  let shown = false;
  for (const [i, item] of items.entries()) {
    const last = i === items.length - 1;
    if (item.status !== (last ? status : "completed")) return { problem: `output[${i}].status is ${item.status}, expected ${last ? status : "completed"}` };
    if (item.type === "reasoning" && i > 0) return { problem: `output[${i}] is a reasoning item after the first item (the think block opens an answer)` };
    if (item.type === "message" && items[i - 1]?.type === "message") return { problem: `output[${i}] is a second message item in a row` };
    if (item.type === "reasoning") reasoning = (reasoning ?? "") + item.content[0].text;
    else if (item.type === "function_call") toolCalls.push({ id: item.call_id, type: "function", function: { name: item.name, arguments: item.arguments } });
    else {
      const text = item.content[0].text;
      if (text === "" && (!last || content !== "" || toolCalls.length > 0)) return { problem: `output[${i}] is an empty message beside other answer items` };
      content += text;
      shown ||= item.content[0].logprobs !== undefined;
      const logprobs = item.content[0].logprobs ?? [];
      // the entries before a text are claimed by it, so an empty text has none
      if (text === "" && logprobs.length > 0) return { problem: `output[${i}] has logprobs but no text` };
      contentLogprobs.push(...logprobs);
    }
  }
  if (!items.some((item) => item.type !== "reasoning")) return { problem: "output has no message and no function call" };
  if (toolCalls.length > MAX_TOOL_CALLS) return { problem: `more than ${MAX_TOOL_CALLS} function calls` };
  const finishReason: FinishReason = status === "incomplete" ? "length" : toolCalls.length > 0 ? "tool_calls" : "stop";
  return { content, contentLogprobs: shown ? contentLogprobs : undefined, toolCalls, reasoning, finishReason };
}
