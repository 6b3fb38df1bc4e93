// Reads a request's JSON body at the boundary: content type, a size cap (413), strict UTF-8 and JSON syntax,
// each fault a 400 or 413 envelope of its own.
import type { IncomingMessage } from "node:http";
import { ApiError } from "../../src/errors.ts";

/**
 * 256 KiB of content characters can take up to 12 bytes each as JSON `\u` escapes of surrogate pairs,
 * plus 100 messages of framing: 4 MiB leaves room for every valid request and stops a flood early.
 */
export const BODY_LIMIT_BYTES = 4 * 1024 * 1024;

const utf8 = new TextDecoder("utf-8", { fatal: true });

export function isJsonContentType(header: string | undefined): boolean {
  const type = header?.split(";")[0]?.trim().toLowerCase();
  return type === "application/json";
}

export async function readJsonBody(req: IncomingMessage, limit = BODY_LIMIT_BYTES): Promise<unknown> {
  if (!isJsonContentType(req.headers["content-type"])) {
    throw new ApiError(
      "invalid_content_type",
      `Send the body as JSON with the header Content-Type: application/json (got ${req.headers["content-type"] ?? "none"}).`,
    );
  }
  const tooLarge = () => new ApiError("body_too_large", `The request body is larger than ${limit} bytes.`);
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > limit) throw tooLarge();
  const body = await collectBody(req, limit);
  if (body === undefined) throw tooLarge();
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new ApiError("invalid_json", "The request body is not valid UTF-8.");
  }
  if (text.trim() === "") throw new ApiError("invalid_json", "The request body is empty; send a JSON object.");
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new ApiError("invalid_json", `The request body is not valid JSON: ${why}.`);
  }
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
