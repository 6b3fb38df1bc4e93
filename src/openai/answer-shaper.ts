// The answer's shape for each route (DESIGN §10): a verified session's pieces and receipt become that route's JSON
// body, or its stream's events, the same bytes whoever runs it. Pure: what writes the bytes is the caller's.
import { ApiError } from "../errors.ts";
import type { AnswerPiece, AnswerRecord } from "../receipt/answer-record.ts";
import { readEmbeddingsContent } from "../receipt/embedding-vectors.ts";
import type { Receipt } from "../receipt/receipt.ts";
import { statusOf } from "../receipt/response-items.ts";
import { legacyBody, legacyEvents, newLegacyMeta, stopEvent } from "./legacy-shapes.ts";
import { renamed } from "./responses-request.ts";
import { itemsOfAnswer, ResponseLayout, type ResponseEvent } from "./responses-layout.ts";
import { newResponseMeta, responseObject } from "./responses-shapes.ts";
import type { RouteRequest } from "./route-request.ts";
import { completionBody, newCompletionMeta, roleChunk, stopChunk, streamChunks } from "./shapes.ts";

/** One server-sent event: its data, and its name where the route names events (the Responses API). */
export interface SseEvent {
  data: unknown;
  event?: string;
}

/** A stream's last events, and whether `data: [DONE]` follows them (chat and legacy completions, on success). */
export interface StreamEnd {
  events: SseEvent[];
  done: boolean;
}

export interface StreamShaper {
  /** What goes out before a provider is chosen (SPEC §3: the head, and chat's role chunk). */
  opening(): SseEvent[];
  /** One piece of the answer (never an empty text: the relay drops those). */
  piece(piece: AnswerPiece): SseEvent[];
  /** After the verified receipt; `extra` joins the last event (the gateway's `x_svc_timing`). */
  closing(receipt: Receipt, extra?: Record<string, unknown>): StreamEnd;
  /** A failure after the head went out (SPEC §3: the error object, no `[DONE]`, no receipt). */
  failing(error: ApiError): StreamEnd;
}

export interface AnswerShaper {
  /** The whole answer as the route's JSON body. */
  whole(answer: AnswerRecord, receipt: Receipt): unknown;
  /** A fault, in the route's own field names. */
  error(err: ApiError): ApiError;
  /** The stream's events; absent where the route never streams (embeddings). */
  stream?: StreamShaper;
}

const failed = (error: ApiError): StreamEnd => ({ events: [{ data: error.toEnvelope() }], done: false });
const same = (err: ApiError) => err;

/** The shaper for one request; `now` stamps its ids' `created`. */
export function shaperOf(request: RouteRequest, now = Date.now()): AnswerShaper {
  // the parse says whether the caller asked for logprobs (issue 43), whatever the route called the field: a complete
  // request (svc-gateway serve --audit) seals them always, and they are checked, but shown only to who asked
  const logprobs = request.kind !== "embeddings" && request.logprobs;
  const hidden = (piece: AnswerPiece) => piece.type === "logprobs" && !logprobs;
  switch (request.kind) {
    case "chat": {
      const meta = newCompletionMeta(request.echo, now);
      const chunks = streamChunks(meta);
      return {
        whole: (answer, receipt) => completionBody(meta, answer, receipt, logprobs),
        error: same,
        stream: {
          opening: () => [{ data: roleChunk(meta) }],
          piece: (piece) => (hidden(piece) ? [] : chunks.piece(piece).map((data) => ({ data }))),
          closing: (receipt, extra) => ({ events: [...chunks.rest().map((data) => ({ data })), { data: { ...stopChunk(meta, receipt), ...extra } }], done: true }),
          failing: failed,
        },
      };
    }
    case "completions": {
      const meta = newLegacyMeta(request.echo, now);
      const events = legacyEvents(meta);
      return {
        whole: (answer, receipt) => legacyBody(meta, answer.content, receipt, logprobs ? answer.logprobs : undefined),
        error: same,
        stream: {
          opening: () => [],
          piece: (piece) => {
            if (piece.type === "logprobs" && !hidden(piece)) events.logprobs(piece.logprobs);
            return piece.type === "delta" ? [{ data: events.text(piece.text) }] : [];
          },
          closing: (receipt, extra) => ({ events: [...events.rest().map((data) => ({ data })), { data: { ...stopEvent(meta, receipt), ...extra } }], done: true }),
          failing: failed,
        },
      };
    }
    case "responses":
      return responsesShaper(request, now, logprobs);
    case "embeddings":
      return { whole: (answer, receipt) => embeddingsBody(request, answer, receipt), error: same };
  }
}

function responsesShaper(request: Extract<RouteRequest, { kind: "responses" }>, now: number, logprobs: boolean): AnswerShaper {
  const meta = newResponseMeta(request.echo, now);
  const echo = request.responses;
  const layout = new ResponseLayout({ logprobs });
  const named = (events: ResponseEvent[]): SseEvent[] => events.map((e) => ({ data: e, event: e.type }));
  return {
    whole: (answer, receipt) => {
      const status = statusOf(receipt.finish_reason);
      return responseObject(meta, echo, { status, output: itemsOfAnswer(answer, status, { logprobs }), receipt });
    },
    error: (err) => renamed(err),
    stream: {
      opening: () => {
        const begun = responseObject(meta, echo, { status: "in_progress", output: [] });
        return named([layout.event("response.created", { response: begun }), layout.event("response.in_progress", { response: begun })]);
      },
      piece: (piece) => named(layout.add(piece)),
      closing: (receipt) => {
        const status = statusOf(receipt.finish_reason);
        const finish = layout.finish(status);
        const done = responseObject(meta, echo, { status, output: layout.items, receipt });
        return { events: named([...finish, layout.event(status === "completed" ? "response.completed" : "response.incomplete", { response: done })]), done: false };
      },
      failing: (error) => {
        // the SPEC envelope's error (its `type` is the event's, as OpenAI's error event has none), then the response failed with it: no receipt
        const envelope = error.toEnvelope().error;
        const { type: _type, ...fields } = envelope;
        const failedResponse = responseObject(meta, echo, { status: "failed", output: [], error: envelope });
        return { events: named([layout.event("error", fields), layout.event("response.failed", { response: failedResponse })]), done: false };
      },
    },
  };
}

/** OpenAI's list of embeddings: only the receipt's canonical form of exactly the vectors asked for is an answer. */
function embeddingsBody(request: Extract<RouteRequest, { kind: "embeddings" }>, answer: AnswerRecord, receipt: Receipt) {
  const { input, dimensions } = request.body;
  const vectors = readEmbeddingsContent(answer.content, input!.length, dimensions!);
  if (vectors === undefined) throw new ApiError("provider_error", "The provider's answer is not the embeddings asked for; retry the request.");
  const base64 = request.encoding === "base64" ? (JSON.parse(answer.content) as string[]) : undefined;
  return {
    object: "list",
    data: vectors.map((vector, index) => ({ object: "embedding", index, embedding: base64?.[index] ?? vector })),
    model: request.echo,
    usage: { prompt_tokens: receipt.usage.prompt_tokens, total_tokens: receipt.usage.prompt_tokens },
    svc_receipt: receipt,
  };
}
