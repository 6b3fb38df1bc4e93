// The Responses API's response object (POST /v1/responses), as OpenAI sends it: what the request asked, echoed,
// then the status, output items and usage. A pure function of plain values, like shapes.ts for chat.
import { randomHex } from "./ids.ts";
import { reportedUsage, type Receipt } from "../receipt/receipt.ts";
import { responsesUsage, type OutputItem } from "../receipt/response-items.ts";
import type { ResponsesEcho } from "./responses-request.ts";

export interface ResponseMeta {
  id: string;
  /** Unix seconds. */
  created_at: number;
  /** The request's `model` value, echoed (SPEC §2.2). */
  model: string;
}

export type ResponseStatus = "in_progress" | "completed" | "incomplete" | "failed";

export interface ResponseState {
  status: ResponseStatus;
  output: OutputItem[];
  /** Absent until the answer is done. */
  receipt?: Receipt;
  /** The SPEC envelope's error object, on a failed stream. */
  error?: Record<string, unknown>;
}

export function newResponseMeta(model: string, now = Date.now()): ResponseMeta {
  return { id: `resp_${randomHex(24)}`, created_at: Math.floor(now / 1000), model };
}

export function responseObject(meta: ResponseMeta, echo: ResponsesEcho, state: ResponseState) {
  const { receipt } = state;
  return {
    id: meta.id,
    object: "response",
    created_at: meta.created_at,
    status: state.status,
    error: state.error ?? null,
    incomplete_details: state.status === "incomplete" ? { reason: "max_output_tokens" } : null,
    instructions: echo.instructions,
    max_output_tokens: echo.max_output_tokens,
    model: meta.model,
    output: state.output,
    parallel_tool_calls: echo.parallel_tool_calls,
    previous_response_id: null,
    reasoning: echo.reasoning,
    store: false,
    temperature: echo.temperature,
    text: echo.text,
    tool_choice: echo.tool_choice,
    tools: echo.tools,
    top_p: echo.top_p,
    truncation: "disabled",
    usage: receipt === undefined ? null : responsesUsage(reportedUsage(receipt)),
    user: echo.user,
    metadata: echo.metadata,
    ...(receipt === undefined ? {} : { svc_receipt: receipt }),
  };
}
