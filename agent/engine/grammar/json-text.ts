// Turns grammar-generated JSON text into the canonical text svc returns: the JSON-schema grammar ends with newlines,
// its integer rule allows exponents ("0e47…", "3e414150" = Infinity), so the text is parsed and written out again.
import { pointer } from "../../../src/schema/json-pointer.ts";

export type JsonText = { ok: true; text: string; value: unknown } | { ok: false; error: string };

/** Parses `text` (surrounding whitespace, such as the grammar's trailing "\n\n\n\n", is dropped) and re-serialises it. */
export function normalizeJsonText(text: string): JsonText {
  let value: unknown;
  try {
    value = JSON.parse(text.trim());
  } catch (err) {
    return { ok: false, error: `not JSON: ${(err as Error).message}` };
  }
  const bad = nonFinite(value, "");
  if (bad !== undefined) return { ok: false, error: `${bad || "the value"} is a number too large for JSON (it parses to Infinity)` };
  return { ok: true, text: JSON.stringify(value), value };
}

/** The JSON pointer of the first number that parsed to ±Infinity, if any. */
function nonFinite(value: unknown, path: string): string | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? undefined : path;
  if (typeof value !== "object" || value === null) return undefined;
  for (const [key, item] of Object.entries(value)) {
    const found = nonFinite(item, pointer(path, key));
    if (found !== undefined) return found;
  }
  return undefined;
}

/** A finished JSON answer as svc returns it: parsed and written out again (no grammar newlines, no exponent integers). */
export function jsonContent(raw: string): string {
  const json = normalizeJsonText(raw);
  // the grammar admits only JSON: this is a bug, never an answer to return as a clean stop
  if (!json.ok) throw new Error(`the grammar-constrained answer is not JSON: ${json.error}`);
  return json.text;
}
