// POST /v1/completions (OpenAI's legacy completions, issue 31): a raw prompt, no chat template, run on the chat
// machinery (routing, sealing, receipts) and answered as `text_completion` objects, whole or as SSE.
import { randomBytes } from "node:crypto";
import { reportedUsage, type Receipt } from "../../src/receipt/receipt.ts";
import type { RouteContext } from "../context.ts";
import { CallerGone } from "../http/caller-gone.ts";
import { asApiError, sendJson } from "../http/respond.ts";
import { RECEIPT_NONCE_HEADER } from "./chat-request.ts";
import { cacheScopeOf, run, sessionOf } from "./completions.ts";
import { parseLegacyRequest } from "./legacy-request.ts";
import { verdictHeaders, verdictOf } from "./shapes.ts";
import { SseWriter } from "./sse.ts";

interface Meta {
  id: string;
  created: number;
  model: string;
}

const choice = (text: string, finishReason: string | null) => ({ text, index: 0, logprobs: null, finish_reason: finishReason });
export const object = (meta: Meta, text: string, finishReason: string | null) => ({ ...meta, object: "text_completion", choices: [choice(text, finishReason)] });

/** The last event of a stream, as chat's stop chunk: finish_reason, usage, the receipt and the verdict fields. */
export function stopEvent(meta: Meta, receipt: Receipt) {
  const verdict = verdictOf(receipt);
  return { ...object(meta, "", receipt.finish_reason), usage: reportedUsage(receipt), svc_receipt: receipt, x_svc_trust: verdict.trust, x_svc_model: verdict.model, x_svc_provider: verdict.provider };
}

export async function legacyCompletions(ctx: RouteContext, body: unknown): Promise<void> {
  const context = { catalog: ctx.gateway.catalog, nonce: randomBytes(16).toString("hex"), receiptNonce: ctx.req.headers[RECEIPT_NONCE_HEADER], cacheScope: cacheScopeOf(ctx, body) };
  const request = parseLegacyRequest(body, context);
  const meta: Meta = { id: `cmpl-${randomBytes(16).toString("base64url")}`, created: Math.floor(Date.now() / 1000), model: request.echo };
  // as chat's: the scope's affinity routes it back to the provider that may hold its prompt cache
  const events = sessionOf(ctx, request)();
  if (!request.stream) {
    const { receipt, answer } = await run(ctx, events, () => undefined);
    ctx.signal.throwIfAborted();
    const headers = { ...verdictHeaders(verdictOf(receipt)), "server-timing": ctx.timing.header() };
    sendJson(ctx.res, 200, { ...object(meta, answer.content, receipt.finish_reason), usage: reportedUsage(receipt), svc_receipt: receipt }, headers);
    return;
  }
  // as chat's stream: the head goes out before a provider is chosen, a failure is the envelope without [DONE]
  const sse = new SseWriter(ctx.res, ctx.gateway.keepaliveMs, { "server-timing": ctx.timing.header() });
  ctx.log.status = 200;
  try {
    const { receipt } = await run(ctx, events, (piece) => (piece.type === "delta" ? sse.send(object(meta, piece.text, null)) : undefined));
    ctx.signal.throwIfAborted();
    await sse.send({ ...stopEvent(meta, receipt), x_svc_timing: ctx.timing.object() });
    sse.done();
  } catch (err) {
    if (ctx.signal.reason instanceof CallerGone) throw err;
    const error = asApiError(err);
    ctx.log.code = error.code;
    if (error.status >= 500) ctx.log.error = error.message;
    sse.fail(error.toEnvelope());
  }
}
