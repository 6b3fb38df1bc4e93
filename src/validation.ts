// Turns zod issues into the field paths and messages we show people (`messages[3].content[0].type`).
import type { z } from "zod";

/** `["messages", 3, "content"]` → `messages[3].content`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out === "" ? String(part) : `.${String(part)}`;
  }
  return out;
}

/** One line per issue, each naming its field: `models[1].sha256: expected 64 lowercase hex characters`. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const where = fieldPath(issue.path);
      return where === "" ? issue.message : `${where}: ${issue.message}`;
    })
    .join("; ");
}
