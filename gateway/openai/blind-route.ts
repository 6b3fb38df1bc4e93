// A gateway-blind request on an OpenAI route (DESIGN §10): the caller sealed its body to up to three attested
// candidates, so the gateway reads only the envelope's clear fields (zod, bounded), admits it to the queues among
// those candidates, passes the caller's prompt-cache scope beside the sealed bytes, and relays the sealed frames as
// lines. It bills from the receipt beside the last frame, checked against the provider's attested key. It never
// holds a key that opens anything. routes.ts has authenticated the key and applied its rate limits before this runs.
import { SEALED_REQUEST_TYPE, SealedEnvelopeSchema, type SealedEnvelope } from "../../src/blind/format.ts";
import { resolveModel, type CatalogEntry } from "../../src/catalog.ts";
import { ApiError } from "../../src/errors.ts";
import { issueError } from "../../src/openai/chat-request.ts";
import { readJsonBody } from "../../src/openai/json-body.ts";
import type { RouteKind } from "../../src/openai/route-kinds.ts";
import { firstIssue } from "../../src/validation.ts";
import type { CacheScope } from "../../src/wire/agent.ts";
import type { RouteContext } from "../context.ts";
import { readBodyBytes } from "../http/body.ts";
import { CallerGone } from "../http/caller-gone.ts";
import { asApiError } from "../http/respond.ts";
import { affinityKey } from "../keys/cache-scope.ts";
import { LineWriter } from "./line-writer.ts";

/** Serves one sealed request on the route of `kind`. */
export async function blindRoute(ctx: RouteContext, kind: RouteKind): Promise<void> {
  const { gateway } = ctx;
  const envelope = readEnvelope(await readBodyBytes(ctx.req, gateway.bodyLimitBytes, SEALED_REQUEST_TYPE), kind);
  const entry = entryOf(gateway.catalog, envelope);
  ctx.log.model = entry.alias;
  ctx.log.stream = envelope.stream;
  // the queues' 503 (and no candidate at or above the floor) before anything is placed
  const only = envelope.candidates.map((c) => c.provider);
  gateway.directory.admit({ entry, floor: gateway.floor, only });
  const { keyId } = ctx.principal;
  // the scope is the gateway's, per key (the caller's prompt_cache_key is sealed); embeddings keep no cache
  const cache: CacheScope | undefined = kind === "embeddings" ? undefined : { scope: gateway.scopeOf(keyId, undefined), owner: gateway.ownerOf(keyId) };
  const events = gateway.directory.openBlind(
    {
      envelope, entry, floor: gateway.floor, requestId: ctx.requestId, timing: ctx.timing, hangUp: ctx.hangUp,
      ...(cache === undefined ? {} : { cache, affinity: affinityKey(entry.alias, cache.scope) }),
    },
    ctx.signal,
  );
  const lines = new LineWriter(ctx.res, envelope.stream ? gateway.keepaliveMs : undefined, { "server-timing": ctx.timing.header() });
  // a whole answer (no stream) comes as one final frame: its provider's line waits for it, so the head, both lines
  // and the end leave in one socket write, as a normal whole answer does; a stream's caller gets the line at once
  let held: string | undefined;
  const release = async () => {
    if (held !== undefined) await lines.send({ type: "provider", provider: held });
    held = undefined;
  };
  try {
    for await (const event of events) {
      if (event.type === "provider") {
        ctx.log.provider = event.provider.id;
        if (envelope.stream) await lines.send({ type: "provider", provider: event.provider.id });
        else held = event.provider.id;
      } else if (event.type === "frame") {
        ctx.log.ttft_ms ??= Math.round((performance.now() - ctx.started) * 100) / 100;
        await release();
        await lines.send({ type: "frame", data: event.data, final: event.final });
      } else if (event.type === "failed") {
        ctx.log.code = event.code;
      } else {
        const { usage } = event.receipt;
        ctx.log.prompt_tokens = usage.prompt_tokens;
        ctx.log.completion_tokens = usage.completion_tokens;
        // what the receipt proves, as for any request: the gateway never saw the text it counts
        gateway.users.noteUsage(ctx.principal, usage, ctx.log.provider);
        ctx.admission.debit(usage.prompt_tokens + usage.completion_tokens);
      }
    }
    await release();
    ctx.log.status = 200;
    lines.end();
  } catch (err) {
    // once a candidate has taken it, a failure follows its line, as it would have in a stream
    if (!(ctx.signal.reason instanceof CallerGone)) await release();
    // before the head, the gateway's own failure is an ordinary envelope with its status (routes.ts sends it)
    if (!lines.started || ctx.signal.reason instanceof CallerGone) throw err;
    const error = asApiError(err);
    Object.assign(ctx.log, { status: 200, code: error.code });
    if (error.status >= 500) ctx.log.error = error.message;
    await lines.send({ type: "error", envelope: error.toEnvelope() });
    lines.end();
  }
}

/** The envelope's clear fields, or the 400 naming the first one wrong. */
function readEnvelope(bytes: Uint8Array, kind: RouteKind): SealedEnvelope {
  const parsed = SealedEnvelopeSchema.safeParse(readJsonBody(bytes));
  if (!parsed.success) throw issueError(firstIssue(parsed.error));
  if (parsed.data.kind !== kind) throw new ApiError("invalid_value", `kind is ${parsed.data.kind}, but this route serves ${kind} requests.`, { param: "kind" });
  return parsed.data;
}

/** The alias's catalog entry: the envelope names it exactly (the seal binds that name), for this route's kind of model. */
function entryOf(catalog: Parameters<typeof resolveModel>[0], envelope: SealedEnvelope): CatalogEntry {
  const entry = resolveModel(catalog, envelope.alias, envelope.kind === "embeddings" ? "embedding" : "chat");
  if (entry.alias !== envelope.alias) throw new ApiError("invalid_value", `alias must be a catalog alias as written (${entry.alias}), since the seal binds it.`, { param: "alias" });
  return entry;
}
