// Small readers shared by the saved-answer parsers (saved-response.ts, saved-stream.ts). Portable: part of the
// verifier in src/receipt/index.ts.
import { canonicalJson } from "./canonical-json.ts";
import { parseStrictJson, StrictJsonError } from "./strict-json.ts";

export type Json = Record<string, unknown>;
export const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The value of `text` (the file, or `subject`: one event's data), read as I-JSON (strict-json.ts). Throws `notJson`
 * and the reader's detail, or, for JSON two readers could read differently, says that of `subject`.
 */
export function parseJson(text: string, subject: string, notJson: string): unknown {
  try {
    return parseStrictJson(text);
  } catch (err) {
    if (!(err instanceof StrictJsonError)) throw err;
    throw new Error(err.kind === "ambiguous" ? `${subject} is not I-JSON (RFC 7493), so JSON readers could read it differently: ${err.message}` : `${notJson}: ${err.message}`);
  }
}

/** `choices[0]` of a completion or chunk, or an empty object when the file has none. */
export function firstChoice(json: Json): Json {
  return Array.isArray(json.choices) && isObject(json.choices[0]) ? json.choices[0] : {};
}

export function describeError(error: unknown): string {
  if (!isObject(error)) return "no details";
  return [error.code, error.message].filter((part) => typeof part === "string").join(": ") || "no details";
}

/** Whether `value` is the JSON value `text` holds (the openai SDK's `parsed` and `parsed_arguments`). */
export function isJsonOf(value: unknown, text: string | null): boolean {
  if (text === null) return false;
  try {
    return canonicalJson(JSON.parse(text)) === canonicalJson(value);
  } catch {
    return false;
  }
}
