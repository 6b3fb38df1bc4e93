// The gateway's HTTP server: route table, auth, the hang-up signal, one JSON log line per request, and the
// envelope for every failure, including malformed HTTP that never reaches a route.
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "pino";
import { ApiError, type ErrorCode } from "../src/errors.ts";
import { CallerGone } from "./http/caller-gone.ts";
import { Drain } from "./http/drain.ts";
import { DEFAULT_HTTP_TIMEOUTS, serverOptions, type HttpTimeouts } from "./http/timeouts.ts";
import { OPS_PATHS, opsRoutes, type Ops, type OpsHandler } from "./http/ops.ts";
import { Router } from "./http/router.ts";
import { openAiRoute } from "./openai/pipeline.ts";
import { ROUTE_PATHS, type RouteKind } from "../src/openai/route-kinds.ts";
import { listModels, listProviders, retrieveModel } from "./openai/listing.ts";
import { providerAttestation } from "./openai/provider-attestation.ts";
import { ServerTiming } from "./http/server-timing.ts";
import { asApiError, sendError } from "./http/respond.ts";
import type { Gateway, RouteContext } from "./context.ts";
import type { RequestLog } from "./request-log.ts";
import { sendErrorPage } from "./web/respond.ts";
import { isPagePath, resolvePage } from "./web/routes.ts";
import { isChatPath, resolveChatPage } from "./web/chat/page.ts";
import { isVerifyPath, resolveVerifyPage } from "./web/verify/page.ts";
import { isAuditPath, resolveAuditRoute } from "./audit/routes.ts";
import { randomHex } from "../src/crypto/random-id.ts";

type Handler = (ctx: RouteContext, param: string) => Promise<void>;

/** An OpenAI route: every kind runs the one pipeline (gateway/openai/pipeline.ts). */
const openAi = (kind: RouteKind) => ({ name: ROUTE_PATHS[kind], path: ROUTE_PATHS[kind], methods: { POST: openAiRoute(kind) } });

const API = new Router<Handler>(
  [
    openAi("chat"),
    openAi("completions"),
    openAi("embeddings"),
    openAi("responses"),
    { name: "/v1/models", path: "/v1/models", methods: { GET: listModels } },
    { name: "/v1/models/{id}", path: /^\/v1\/models\/([^/]+)$/, methods: { GET: retrieveModel } },
    { name: "/v1/providers", path: "/v1/providers", methods: { GET: listProviders } },
    { name: "/v1/providers/{id}/attestation", path: /^\/v1\/providers\/([^/]+)\/attestation$/, methods: { GET: providerAttestation } },
  ],
  // 404 and 405 need no key: they say nothing about the service
  (method, path) => `No route ${method} ${path}; the API is in docs/api.md.`,
);

async function handle(gateway: Gateway, drain: Drain, ops: Router<OpsHandler>, logger: Logger, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const started = performance.now();
  const timing = new ServerTiming(started);
  const requestId = `req_${randomHex(12)}`;
  res.setHeader("x-request-id", requestId);
  // one signal per request: the caller hanging up (CallerGone) or the shutdown deadline (an ApiError)
  const controller = new AbortController();
  drain.track(controller, res);
  res.once("close", () => {
    if (!res.writableFinished) controller.abort(new CallerGone());
  });
  const method = req.method ?? "GET";
  const path = (req.url ?? "/").split("?")[0] ?? "/";
  let routeName = "unmatched";
  const log: RequestLog = {};
  // the settings pages are HTML for browsers, signed in by cookie; every other route is the bearer-key API
  const page = isPagePath(path) || isVerifyPath(path) || isChatPath(path);
  gateway.metrics.inFlight.inc();
  try {
    if (drain.draining) {
      res.setHeader("connection", "close");
      if (!OPS_PATHS.has(path)) throw new ApiError("shutting_down", "The gateway is shutting down; send the request to another gateway or retry shortly.");
    }
    if (OPS_PATHS.has(path)) {
      const { name, handler } = ops.resolve(method, path, res);
      routeName = name;
      await handler(res);
    } else if (isAuditPath(path)) {
      // failed audits' evidence and the key that signs it are public: anyone re-checks them without a key here
      const resolved = resolveAuditRoute(gateway, method, path, res);
      routeName = resolved.name;
      await resolved.serve();
    } else if (page) {
      // /verify and /chat are public: no sign-in, no key (/chat's requests carry the key the user types)
      const resolved = isVerifyPath(path)
        ? resolveVerifyPage(gateway.catalog, method, path, res)
        : isChatPath(path)
          ? resolveChatPage(gateway, method, path, res)
          : resolvePage(gateway.signIn, method, path, res);
      routeName = resolved.name;
      await resolved.serve(req, res);
    } else {
      const { name, handler, param } = API.resolve(method, path, res);
      routeName = name;
      const authStart = performance.now();
      const principal = await gateway.limiter.authenticate(req, () => gateway.auth.authenticate(req.headers.authorization))
        .finally(() => timing.add("auth", performance.now() - authStart));
      // a shared budget (replicas on PostgreSQL) may lease a slice first; the gateway's own counters never wait
      const lease = gateway.limiter.ready(principal);
      if (lease !== undefined) await lease;
      const admission = gateway.limiter.admit(principal, res);
      const hangUp = (why: CallerGone) => {
        controller.abort(why);
        res.destroy();
      };
      const ctx: RouteContext = { gateway, req, res, requestId, started, signal: controller.signal, hangUp, log, principal, admission, timing };
      await handler(ctx, param);
    }
    log.status ??= res.statusCode;
  } catch (err) {
    if (controller.signal.reason instanceof CallerGone) {
      // SPEC §7 `aborted`: the session is aborted and no body is sent (or the code the gateway let the caller go with)
      log.code = controller.signal.reason.code;
    } else {
      if (!(err instanceof ApiError)) logger.error({ id: requestId, err }, "unexpected failure");
      const error = asApiError(err);
      Object.assign(log, { status: error.status, code: error.code });
      // a 4xx message can quote what the caller sent; only the gateway's own failures are spelled out
      if (error.status >= 500) log.error = error.message;
      if (!res.headersSent) res.setHeader("server-timing", timing.header());
      if (page) sendErrorPage(req, res, error);
      else sendError(req, res, error);
    }
  } finally {
    gateway.metrics.inFlight.dec();
    const seconds = (performance.now() - started) / 1000;
    gateway.metrics.observe(routeName, method, log, seconds);
    logger.info({ id: requestId, method, route: routeName, ...log, latency_ms: Math.round(seconds * 100_000) / 100 }, "request");
  }
}

/** The gateway is healthy while its coordinator link is up and it is not shutting down. */
function opsOf(gateway: Gateway, drain: Drain): Ops {
  return {
    registry: gateway.metrics.registry,
    health: () => {
      const coordinator = gateway.directory.connected ? "connected" : "unreachable";
      const status = drain.draining ? "draining" : coordinator === "connected" ? "ok" : "unavailable";
      return { ok: status === "ok", body: { status, coordinator } };
    },
  };
}

const CLIENT_ERRORS: Record<string, [ErrorCode, string]> = {
  HPE_HEADER_OVERFLOW: ["headers_too_large", "The request headers are too large."],
  ERR_HTTP_REQUEST_TIMEOUT: ["request_timeout", "The request took too long to arrive."],
};

/** Malformed HTTP never reaches a route; it still gets the envelope, then the connection closes. */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex, logger: Logger): void {
  if (!socket.writable || err.code === "ECONNRESET") {
    socket.destroy();
    return;
  }
  const [code, message] = CLIENT_ERRORS[err.code ?? ""] ?? ["malformed_request", "The HTTP request is malformed."];
  const error = new ApiError(code, message);
  const body = JSON.stringify(error.toEnvelope());
  socket.end(
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ""}\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
  logger.info({ route: "unparsed", status: error.status, code: error.code }, "request");
}

export interface GatewayServer {
  server: Server;
  /** Stops accepting, lets requests in flight finish for up to `graceMs`, then ends them with 503 shutting_down. */
  drain(graceMs: number): Promise<void>;
}

export function createGatewayServer(gateway: Gateway, logger: Logger, timeouts: HttpTimeouts = DEFAULT_HTTP_TIMEOUTS): GatewayServer {
  const drain = new Drain();
  const ops = new Router(opsRoutes(opsOf(gateway, drain)));
  const server = createServer(serverOptions(timeouts), (req, res) => {
    handle(gateway, drain, ops, logger, req, res).catch((err: unknown) => {
      logger.error({ err }, "request handler failed");
      if (!res.headersSent) res.destroy();
    });
  });
  server.on("clientError", (err: NodeJS.ErrnoException, socket: Duplex) => answerClientError(err, socket, logger));
  return { server, drain: (graceMs) => drain.drain(server, graceMs) };
}
