// One path from an OpenAI body to its session (issue 43 item 2): the body's bytes read, admitted and parsed, then the
// session opened through the directory. The HTTP routes (pipeline.ts) and the auditor (gateway/audit/) both take it,
// so an audit is a body any caller could send, sealed and routed as theirs are, not a side door.
import { randomBytes } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { CacheInputs } from "../../src/openai/cache-fields.ts";
import { RECEIPT_NONCE_HEADER, type Completion } from "../../src/openai/chat-request.ts";
import type { RoutePeek, RouteRequest } from "../../src/openai/route-request.ts";
import type { RouteKind } from "../../src/openai/route-kinds.ts";
import type { Gateway } from "../context.ts";
import type { SessionEvent, SessionRequest } from "../directory/directory.ts";
import type { Principal } from "../keys/auth.ts";
import { affinityKey } from "../keys/cache-scope.ts";
import { admitBeforeWork } from "./pre-admission.ts";
import type { Tenant } from "./request-parser.ts";

/** Who sends the body and what its session is tied to: an HTTP request's, or the auditor's own. */
export interface SessionSource extends Pick<SessionRequest, "requestId" | "timing" | "hangUp"> {
  gateway: Gateway;
  principal: Principal;
  /** Aborts the parse's wait and the session. */
  signal: AbortSignal;
}

export interface OpenableSession {
  request: RouteRequest;
  /** Opens the session: its events, provider first, answer pieces, then the verified receipt. */
  open(): AsyncIterable<SessionEvent>;
  /** What completed the request (`--audit`): so a seed the gateway drew is not taken for the caller's. */
  completion: Completion | undefined;
}

/**
 * The parsed request for these bytes, and how to open its session. `pin` (the auditor's) stands in for the body's,
 * which the auditor never writes: a pin is not sealed, so the provider cannot see it either way.
 */
export async function sessionFor(source: SessionSource, kind: RouteKind, bytes: Uint8Array, headers: IncomingHttpHeaders, options: { pin?: string } = {}): Promise<OpenableSession> {
  const { gateway } = source;
  const inputs = { nonce: randomBytes(16).toString("hex"), receiptNonce: headers[RECEIPT_NONCE_HEADER], complete: completionOf(gateway) };
  const parsed = await gateway.parser.parse(kind, bytes, inputs, tenantOf(source.principal), (peek) => admit(source, kind, peek), source.signal);
  const request = options.pin === undefined ? parsed : { ...parsed, pin: options.pin };
  return { request, open: () => open(source, request), completion: inputs.complete };
}

/** With `--audit`, what completes a request: a seed uniform over llama.cpp's 32 bits, as an agent draws its own. */
export const completionOf = (gateway: Pick<Gateway, "completeRequests">): Completion | undefined =>
  gateway.completeRequests ? { seed: randomBytes(4).readUInt32BE(0) } : undefined;

/** A key's bodies wait their turn as their user's (an operator key is a tenant of its own). */
export const tenantOf = (principal: Principal): Tenant => ({ key: principal.keyId, user: principal.kind === "user" ? `user:${principal.userId}` : principal.keyId });

/** The queues' 503 before the costly parse, then the caller's prompt-cache scope for the body's key and its owner (DESIGN §9). */
function admit(source: SessionSource, kind: RouteKind, peek: RoutePeek): CacheInputs {
  admitBeforeWork(kind, peek, source.gateway);
  if (kind === "embeddings") return {};
  const { keyId } = source.principal;
  return { cacheScope: source.gateway.scopeOf(keyId, peek.promptCacheKey), cacheOwner: source.gateway.ownerOf(keyId) };
}

/** The session a parsed request opens: the directory carries the parsed body whole, beside what it needs to route
 * the session and check its receipt. */
function open(source: SessionSource, request: RouteRequest): AsyncIterable<SessionEvent> {
  const { directory, floor } = source.gateway;
  const { entry, pin, cacheScope } = request;
  // the conversation's way back to the provider that may hold its prompt cache (DESIGN §9); none when the caller
  // asked that nothing be kept
  const affinity = cacheScope === undefined ? undefined : affinityKey(entry.alias, cacheScope);
  const { requestId, timing, hangUp } = source;
  return directory.open({ body: request.body, entry, pin, affinity, floor, requestId, whole: !request.stream, timing, hangUp }, source.signal);
}
