// Every OpenAI route as one recipe (issue 41, DESIGN §10). Before this runs, gateway/routes.ts has authenticated the
// key and admitted it under its rate limits. Then: the body read within its size limit, admitted to the queues and
// parsed (off the event loop where it costs: request-parser.ts; the parse and the session open in session-for.ts, which the auditor shares), sealed and relayed through the directory, and the
// verified answer shaped by the route's shaper (src/openai/answer-shaper.ts) into one JSON body or an SSE stream.
// A body the caller sealed itself (application/svc-sealed+json) is relayed unread instead (blind-route.ts).
import { ApiError } from "../../src/errors.ts";
import { shaperOf, type AnswerShaper, type SseEvent, type StreamEnd, type StreamShaper } from "../../src/openai/answer-shaper.ts";
import type { RouteKind } from "../../src/openai/route-kinds.ts";
import { verdictHeaders, verdictOf } from "../../src/openai/shapes.ts";
import type { AnswerPiece, AnswerRecord } from "../../src/receipt/answer-record.ts";
import type { Receipt } from "../../src/receipt/receipt.ts";
import type { RouteContext } from "../context.ts";
import type { SessionEvent } from "../directory/directory.ts";
import { SEALED_REQUEST_TYPE } from "../../src/blind/format.ts";
import { mediaTypeOf, readBodyBytes } from "../http/body.ts";
import { CallerGone } from "../http/caller-gone.ts";
import { asApiError, sendJson } from "../http/respond.ts";
import { blindRoute } from "./blind-route.ts";
import { shapeOf } from "../audit/traffic-shape.ts";
import { sessionFor } from "./session-for.ts";
import { SseWriter } from "./sse.ts";

/** The handler of the route that serves `kind`. */
export function openAiRoute(kind: RouteKind): (ctx: RouteContext) => Promise<void> {
  return async (ctx) => {
    // a gateway-blind request: sealed by the caller, relayed unread (DESIGN §10)
    if (mediaTypeOf(ctx.req.headers["content-type"]) === SEALED_REQUEST_TYPE) return blindRoute(ctx, kind);
    const bytes = await readBodyBytes(ctx.req, ctx.gateway.bodyLimitBytes);
    const { request, open, completion } = await sessionFor(ctx, kind, bytes, ctx.req.headers);
    // what callers send, so audits look the same (gateway/audit/traffic-shape.ts): the shape, never the content
    ctx.gateway.audits?.shapes?.note(shapeOf(request, completion?.seed));
    ctx.log.model = request.entry.alias;
    ctx.log.stream = request.stream;
    const shaper = shaperOf(request);
    if (request.stream && shaper.stream !== undefined) await streamed(ctx, shaper, shaper.stream, open);
    else await whole(ctx, shaper, open);
  };
}

/** Runs a session to its end, handing each piece of the answer to `onPiece`; returns the verified receipt and the answer it covers. */
async function run(ctx: RouteContext, events: AsyncIterable<SessionEvent>, onPiece: (piece: AnswerPiece) => unknown): Promise<{ receipt: Receipt; answer: AnswerRecord }> {
  for await (const event of events) {
    if (event.type === "provider") {
      ctx.log.provider = event.provider.id;
      // an ordinary placement: the auditor may audit this provider after it (gateway/audit/scheduler.ts)
      if (ctx.log.model !== undefined) ctx.gateway.audits?.auditor?.placed(event.provider.id, ctx.log.model);
      continue;
    }
    if (event.type !== "done") {
      ctx.log.ttft_ms ??= Math.round((performance.now() - ctx.started) * 100) / 100;
      if (!("text" in event) || event.text !== "") await onPiece(event);
      continue;
    }
    const { usage } = event.receipt;
    ctx.log.prompt_tokens = usage.prompt_tokens;
    ctx.log.completion_tokens = usage.completion_tokens;
    // counted only once the receipt is verified: a key's usage (and its tokens per minute) is what its receipts prove
    ctx.gateway.users.noteUsage(ctx.principal, usage, ctx.log.provider);
    ctx.admission.debit(usage.prompt_tokens + usage.completion_tokens);
    return { receipt: event.receipt, answer: event.answer };
  }
  ctx.signal.throwIfAborted();
  throw new ApiError("provider_error", "The provider ended the session without a result.");
}

async function whole(ctx: RouteContext, shaper: AnswerShaper, session: () => AsyncIterable<SessionEvent>): Promise<void> {
  // the directory assembled the answer to check the receipt against it: the body is that same answer
  const { receipt, answer } = await run(ctx, session(), () => undefined).catch((err: unknown) => {
    throw err instanceof ApiError ? shaper.error(err) : err;
  });
  ctx.signal.throwIfAborted();
  sendJson(ctx.res, 200, shaper.whole(answer, receipt), { ...verdictHeaders(verdictOf(receipt)), "server-timing": ctx.timing.header() });
}

async function streamed(ctx: RouteContext, shaper: AnswerShaper, stream: StreamShaper, session: () => AsyncIterable<SessionEvent>): Promise<void> {
  // the head goes out before a provider is chosen (SPEC §3): it can say only what is known now
  const sse = new SseWriter(ctx.res, ctx.gateway.keepaliveMs, { "server-timing": ctx.timing.header() });
  const send = async (events: SseEvent[]) => {
    for (const { data, event } of events) await sse.send(data, event);
  };
  const finish = async ({ events, done }: StreamEnd) => {
    await send(events);
    if (done) sse.done();
    else sse.end();
  };
  ctx.log.status = 200;
  await send(stream.opening());
  try {
    const { receipt } = await run(ctx, session(), (piece) => send(stream.piece(piece)));
    ctx.signal.throwIfAborted();
    await finish(stream.closing(receipt, { x_svc_timing: ctx.timing.object() }));
  } catch (err) {
    if (ctx.signal.reason instanceof CallerGone) throw err; // the caller is gone: nothing more is written
    const error = err instanceof ApiError ? shaper.error(err) : asApiError(err);
    ctx.log.code = error.code;
    if (error.status >= 500) ctx.log.error = err instanceof ApiError ? error.message : String(err);
    // SPEC §3: the error object in a data line, no [DONE], no receipt
    await finish(stream.failing(error));
  }
}
