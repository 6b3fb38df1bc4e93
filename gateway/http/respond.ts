// Writing plain JSON answers and error envelopes; the one place an error becomes bytes on a response.
import type { IncomingMessage, ServerResponse } from "node:http";
import { ApiError } from "../../src/errors.ts";

/** How much of an unwanted body we read and drop to keep the connection usable. */
const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;

/** A whole body with its length; nothing once the response is gone or already started. */
export function sendBody(res: ServerResponse, status: number, contentType: string, body: string, headers: Record<string, string> = {}): void {
  if (res.destroyed || res.headersSent) return;
  res.writeHead(status, { "content-type": contentType, "content-length": Buffer.byteLength(body), ...headers });
  res.end(body);
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendBody(res, status, "application/json", JSON.stringify(body), headers);
}

/** Any thrown value as an ApiError: ours as they are, anything else an internal error with no detail leaked. */
export function asApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  return new ApiError("internal_error", "The gateway failed while handling the request; try again.");
}

/**
 * Before answering a request whose body is not all in: the rest flows in and is dropped, so a client still
 * sending reads the answer instead of a broken pipe; past a sane size the connection closes after the answer.
 */
export function dropUnreadBody(req: IncomingMessage, res: ServerResponse): void {
  if (req.complete) return;
  const declared = Number(req.headers["content-length"] ?? 0);
  if (!(declared <= DRAIN_LIMIT_BYTES)) res.setHeader("connection", "close");
  req.resume();
}

/** The headers every answer of this error carries, whatever its body: `Retry-After` when the error names a wait. */
export function errorHeaders(error: ApiError): Record<string, string> {
  return error.retryAfterS === undefined ? {} : { "retry-after": String(error.retryAfterS) };
}

export function sendError(req: IncomingMessage, res: ServerResponse, error: ApiError, headers: Record<string, string> = {}): void {
  dropUnreadBody(req, res);
  sendJson(res, error.status, error.toEnvelope(), { ...errorHeaders(error), ...headers });
}
