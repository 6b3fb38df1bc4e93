// POST /v1/chat/completions (SPEC §4.1): validate, resolve the model before any provider is touched, pick a
// provider, run the session and answer as one JSON body or as the SSE sequence of SPEC §3.
import { randomBytes } from "node:crypto";
import { ApiError } from "../../src/errors.ts";
import type { Receipt } from "../../src/receipt/receipt.ts";
import { RECEIPT_NONCE_HEADER, type ChatRequest } from "./chat-request.ts";
import { admitBeforeWork } from "./pre-admission.ts";
import { affinityKey, bodyScope } from "../keys/cache-scope.ts";
import type { SessionEvent } from "../directory/directory.ts";
import type { AnswerPiece, AnswerRecord } from "../../src/receipt/answer-record.ts";
import {
  completionBody,
  newCompletionMeta,
  pieceChunk,
  roleChunk,
  stopChunk,
  verdictHeaders,
  verdictOf,
  type CompletionMeta,
} from "./shapes.ts";
import { asApiError, sendJson } from "../http/respond.ts";
import type { RouteContext } from "../context.ts";
import { CallerGone } from "../http/caller-gone.ts";
import { SseWriter } from "./sse.ts";

export async function chatCompletions(ctx: RouteContext, body: unknown): Promise<void> {
  const { parser } = ctx.gateway;
  // the queues' 503 before the schemas' work: a full service costs a hostile schema nothing to refuse
  admitBeforeWork(body, ctx.gateway);
  const nonce = randomBytes(16).toString("hex");
  const request = await parser.parse(body, { nonce, receiptNonce: ctx.req.headers[RECEIPT_NONCE_HEADER], cacheScope: cacheScopeOf(ctx, body) }, ctx.signal);
  const meta = newCompletionMeta(request.echo);
  const session = sessionOf(ctx, request);
  if (request.stream) await streamed(ctx, meta, session);
  else await whole(ctx, meta, session);
}

/** The caller's prompt-cache scope for this body (DESIGN §9). */
export const cacheScopeOf = (ctx: RouteContext, body: unknown): string => bodyScope(ctx.gateway.scopeOf, ctx.principal.keyId, body);

/** The session a parsed request opens, noted in the request's log line: the directory carries the parsed body
 * whole, beside what it needs to route the session and check its receipt. */
export function sessionOf(ctx: RouteContext, request: ChatRequest): () => AsyncIterable<SessionEvent> {
  const { directory, floor } = ctx.gateway;
  ctx.log.model = request.entry.alias;
  ctx.log.stream = request.stream;
  const { entry, pin, cacheScope } = request;
  // the conversation's way back to the provider that may hold its prompt cache (DESIGN §9); none when the caller
  // asked that nothing be kept
  const affinity = cacheScope === undefined ? undefined : affinityKey(entry.alias, cacheScope);
  return () => directory.open({ body: request.body, entry, pin, affinity, floor, requestId: ctx.requestId, whole: !request.stream, timing: ctx.timing }, ctx.signal);
}

/** Runs a session to its end, handing each piece of the answer to `onPiece`; returns the verified receipt and the answer it covers. */
export async function run(ctx: RouteContext, events: AsyncIterable<SessionEvent>, onPiece: (piece: AnswerPiece) => unknown): Promise<{ receipt: Receipt; answer: AnswerRecord }> {
  for await (const event of events) {
    if (event.type === "provider") {
      ctx.log.provider = event.provider.id;
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

async function whole(ctx: RouteContext, meta: CompletionMeta, session: () => AsyncIterable<SessionEvent>) {
  // the directory assembled the answer to check the receipt against it: the body is that same answer
  const { receipt, answer } = await run(ctx, session(), () => undefined);
  ctx.signal.throwIfAborted();
  sendJson(ctx.res, 200, completionBody(meta, answer, receipt), { ...verdictHeaders(verdictOf(receipt)), "server-timing": ctx.timing.header() });
}

async function streamed(ctx: RouteContext, meta: CompletionMeta, session: () => AsyncIterable<SessionEvent>) {
  // the head goes out before a provider is chosen (SPEC §3): it can say only what is known now
  const sse = new SseWriter(ctx.res, ctx.gateway.keepaliveMs, { "server-timing": ctx.timing.header() });
  ctx.log.status = 200;
  await sse.send(roleChunk(meta));
  try {
    const { receipt } = await run(ctx, session(), (piece) => sse.send(pieceChunk(meta, piece)));
    ctx.signal.throwIfAborted();
    await sse.send({ ...stopChunk(meta, receipt), x_svc_timing: ctx.timing.object() });
    sse.done();
  } catch (err) {
    if (ctx.signal.reason instanceof CallerGone) throw err; // the caller is gone: nothing more is written
    const error = asApiError(err);
    ctx.log.code = error.code;
    if (error.status >= 500) ctx.log.error = err instanceof ApiError ? error.message : String(err);
    // SPEC §3: the error object in a data line, no [DONE], no receipt
    sse.fail(error.toEnvelope());
  }
}
