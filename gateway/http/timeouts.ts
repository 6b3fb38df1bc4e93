// How long a client may take to deliver a request. A slow head or a slow body (slowloris) holds a socket and
// memory for nothing; Node cuts it with 408 request_timeout (see gateway/routes.ts's clientError answer).
import type { ServerOptions } from "node:http";

export interface HttpTimeouts {
  /** The request line and headers must be in within this. */
  headMs: number;
  /** The whole request, body included, must be in within this (at least headMs). */
  bodyMs: number;
}

export const DEFAULT_HTTP_TIMEOUTS: HttpTimeouts = { headMs: 10_000, bodyMs: 30_000 };

export function serverOptions({ headMs, bodyMs }: HttpTimeouts): ServerOptions {
  return {
    headersTimeout: headMs,
    requestTimeout: Math.max(headMs, bodyMs),
    // Node checks the two deadlines on this interval (30 s by default, too coarse for a 10 s deadline)
    connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(headMs / 4))),
    // an idle keep-alive connection goes after this (Node's default), so idle sockets cannot pile up
    keepAliveTimeout: 5_000,
  };
}
