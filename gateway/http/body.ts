// Reads a request's body at the boundary: its content type and a size cap (413), each fault an envelope of its own.
import type { IncomingMessage } from "node:http";
import { ApiError } from "../../src/errors.ts";

/**
 * 256 KiB of content characters can take up to 12 bytes each as JSON `\u` escapes of surrogate pairs,
 * plus 100 messages of framing: 4 MiB leaves room for every valid request and stops a flood early.
 */
export const BODY_LIMIT_BYTES = 4 * 1024 * 1024;

/** A Content-Type header's media type, lowercase, without its parameters. */
export const mediaTypeOf = (header: string | undefined): string | undefined => header?.split(";")[0]?.trim().toLowerCase();

export function isJsonContentType(header: string | undefined): boolean {
  return mediaTypeOf(header) === "application/json";
}

/** The body's bytes, within `limit`; JSON parsing is the route's (src/openai/json-body.ts), off the event loop when it costs. */
export async function readBodyBytes(req: IncomingMessage, limit = BODY_LIMIT_BYTES, mediaType = "application/json"): Promise<Buffer> {
  if (mediaTypeOf(req.headers["content-type"]) !== mediaType) {
    throw new ApiError(
      "invalid_content_type",
      `Send the body as JSON with the header Content-Type: ${mediaType} (got ${req.headers["content-type"] ?? "none"}).`,
    );
  }
  const tooLarge = () => new ApiError("body_too_large", `The request body is larger than ${limit} bytes.`);
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > limit) throw tooLarge();
  const body = await collectBody(req, limit);
  if (body === undefined) throw tooLarge();
  return body;
}

/**
 * The whole body, or undefined once it passes `limit`. Past the limit the rest still flows (and is thrown
 * away) rather than the socket being cut: a client still sending would otherwise never read the 413.
 */
export function collectBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", reject);
      req.resume();
      resolve(undefined);
    };
    const onEnd = () => resolve(Buffer.concat(chunks, size));
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("error", reject);
  });
}
