// POST /v1/embeddings (issue 31): validate, resolve an embedding model, route and seal like chat, and answer
// OpenAI's list of embeddings from the verified session, whose receipt covers exactly the vectors returned.
import { randomBytes } from "node:crypto";
import { ApiError } from "../../src/errors.ts";
import { readEmbeddingsContent } from "../../src/receipt/embedding-vectors.ts";
import type { RouteContext } from "../context.ts";
import { sendJson } from "../http/respond.ts";
import { RECEIPT_NONCE_HEADER } from "./chat-request.ts";
import { run } from "./completions.ts";
import { parseEmbeddingsRequest } from "./embeddings-request.ts";
import { verdictHeaders, verdictOf } from "./shapes.ts";

export async function embeddings(ctx: RouteContext, body: unknown): Promise<void> {
  const { catalog, directory, floor } = ctx.gateway;
  const nonce = randomBytes(16).toString("hex");
  const request = parseEmbeddingsRequest(body, { catalog, nonce, receiptNonce: ctx.req.headers[RECEIPT_NONCE_HEADER] });
  ctx.log.model = request.entry.alias;
  const { entry, pin } = request;
  const events = directory.open({ body: request.body, entry, pin, floor, requestId: ctx.requestId, whole: true, timing: ctx.timing }, ctx.signal);
  const { receipt, answer } = await run(ctx, events, () => undefined);
  ctx.signal.throwIfAborted();
  // the receipt covers the content as relayed; only its canonical form of the vectors asked for is an answer
  const { input, dimensions } = request.body;
  const vectors = readEmbeddingsContent(answer.content, input!.length, dimensions!);
  if (vectors === undefined) throw new ApiError("provider_error", "The provider's answer is not the embeddings asked for; retry the request.");
  const base64 = request.encoding === "base64" ? (JSON.parse(answer.content) as string[]) : undefined;
  const usage = { prompt_tokens: receipt.usage.prompt_tokens, total_tokens: receipt.usage.prompt_tokens };
  sendJson(
    ctx.res,
    200,
    {
      object: "list",
      data: vectors.map((vector, index) => ({ object: "embedding", index, embedding: base64?.[index] ?? vector })),
      model: request.echo,
      usage,
      svc_receipt: receipt,
    },
    { ...verdictHeaders(verdictOf(receipt)), "server-timing": ctx.timing.header() },
  );
}
