// POST /v1/responses (docs/api.md "Responses"): the request is translated into a chat request and runs through
// the very session chat runs (completions.ts); only the answer's shape differs, as one body or OpenAI's events.
import { randomBytes } from "node:crypto";
import { ApiError } from "../../src/errors.ts";
import { statusOf } from "../../src/receipt/response-items.ts";
import type { SessionEvent } from "../directory/directory.ts";
import { CallerGone } from "../http/caller-gone.ts";
import { asApiError, sendJson } from "../http/respond.ts";
import type { RouteContext } from "../context.ts";
import { RECEIPT_NONCE_HEADER } from "./chat-request.ts";
import { cacheScopeOf, run, sessionOf } from "./completions.ts";
import { parseResponsesRequest, renamed, type ResponsesEcho } from "./responses-request.ts";
import { itemsOfAnswer, ResponseLayout, type ResponseEvent } from "./responses-layout.ts";
import { newResponseMeta, responseObject, type ResponseMeta } from "./responses-shapes.ts";
import { verdictHeaders, verdictOf } from "./shapes.ts";
import { SseWriter } from "./sse.ts";

export async function createResponse(ctx: RouteContext, body: unknown): Promise<void> {
  const nonce = randomBytes(16).toString("hex");
  const context = { catalog: ctx.gateway.catalog, nonce, receiptNonce: ctx.req.headers[RECEIPT_NONCE_HEADER], cacheScope: cacheScopeOf(ctx, body) };
  const { chat: request, echo } = parseResponsesRequest(body, context);
  const meta = newResponseMeta(request.echo);
  const session = sessionOf(ctx, request);
  if (request.stream) await streamed(ctx, meta, echo, session);
  else await whole(ctx, meta, echo, session);
}

async function whole(ctx: RouteContext, meta: ResponseMeta, echo: ResponsesEcho, session: () => AsyncIterable<SessionEvent>) {
  const { receipt, answer } = await run(ctx, session(), () => undefined).catch((err: unknown) => {
    throw err instanceof ApiError ? renamed(err) : err;
  });
  ctx.signal.throwIfAborted();
  const status = statusOf(receipt.finish_reason);
  const body = responseObject(meta, echo, { status, output: itemsOfAnswer(answer, status), receipt });
  sendJson(ctx.res, 200, body, { ...verdictHeaders(verdictOf(receipt)), "server-timing": ctx.timing.header() });
}

async function streamed(ctx: RouteContext, meta: ResponseMeta, echo: ResponsesEcho, session: () => AsyncIterable<SessionEvent>) {
  const sse = new SseWriter(ctx.res, ctx.gateway.keepaliveMs, { "server-timing": ctx.timing.header() });
  const send = async (events: ResponseEvent[]) => {
    for (const event of events) await sse.send(event, event.type);
  };
  ctx.log.status = 200;
  const layout = new ResponseLayout();
  const begun = responseObject(meta, echo, { status: "in_progress", output: [] });
  await send([layout.event("response.created", { response: begun }), layout.event("response.in_progress", { response: begun })]);
  try {
    const { receipt } = await run(ctx, session(), (piece) => send(layout.add(piece)));
    ctx.signal.throwIfAborted();
    const status = statusOf(receipt.finish_reason);
    await send(layout.finish(status));
    const done = responseObject(meta, echo, { status, output: layout.items, receipt });
    await send([layout.event(status === "completed" ? "response.completed" : "response.incomplete", { response: done })]);
    sse.end();
  } catch (err) {
    if (ctx.signal.reason instanceof CallerGone) throw err;
    const error = err instanceof ApiError ? renamed(err) : asApiError(err);
    ctx.log.code = error.code;
    if (error.status >= 500) ctx.log.error = err instanceof ApiError ? error.message : String(err);
    // the SPEC envelope's error (its `type` is the event's, as OpenAI's error event has none), then the response failed with it: no receipt
    const envelope = error.toEnvelope().error;
    const { type: _type, ...fields } = envelope;
    await send([layout.event("error", fields), layout.event("response.failed", { response: responseObject(meta, echo, { status: "failed", output: [], error: envelope }) })]);
    sse.end();
  }
}
