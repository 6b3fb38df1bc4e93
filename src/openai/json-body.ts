// A request body's bytes to JSON, bounded before the parse: strict UTF-8, then a linear scan that refuses nesting
// past the limit (JSON.parse has none: 2 million nested `[` parse for seconds), then JSON.parse. Shared by every
// route, on the gateway's event loop for small bodies and in its parse workers for the rest (issue 41).
import { ApiError } from "../errors.ts";
import { SCHEMA_LIMITS } from "../schema/bounds.ts";

/**
 * Objects and arrays inside one another in a body: a schema's own nesting limit (schema_depth) plus the few levels
 * a body puts around a schema (`tools[i].function.parameters`, `text.format.schema`), with room to spare.
 */
export const MAX_BODY_DEPTH = SCHEMA_LIMITS.schema_depth + 16;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The body as JSON, or the 400 naming what is wrong with it. */
export function readJsonBody(bytes: Uint8Array, maxDepth = MAX_BODY_DEPTH): unknown {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new ApiError("invalid_json", "The request body is not valid UTF-8.");
  }
  if (text.trim() === "") throw new ApiError("invalid_json", "The request body is empty; send a JSON object.");
  if (nestingPast(text, maxDepth)) {
    throw new ApiError("body_too_deep", `The request body nests objects and arrays more than ${maxDepth} deep; at most ${maxDepth} levels are allowed (limit body_depth).`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new ApiError("invalid_json", `The request body is not valid JSON: ${why}.`);
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * Whether `text` opens more than `max` objects and arrays inside one another, counting only brackets outside
 * strings. It reads text that may not be JSON at all: a wrong count there only decides which 400 the caller gets.
 */
export function nestingPast(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}
