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

export type Issue = z.core.$ZodIssue;

/**
 * The first issue in document order, looking inside unions: when one branch got past the type check (an
 * array of parts, say), its own first issue is the one that explains the fault.
 */
export function firstIssue(error: z.ZodError): Issue {
  const issue = error.issues[0];
  if (!issue) throw new Error("a failed parse without issues");
  return resolveUnion(issue);
}

function resolveUnion(issue: Issue): Issue {
  if (issue.code !== "invalid_union") return issue;
  const rootType = (branch: Issue[]) => branch.every((i) => i.code === "invalid_type" && i.path.length === 0);
  const inner = issue.errors.find((branch) => branch.length > 0 && !rootType(branch))?.[0];
  if (inner) return resolveUnion({ ...inner, path: [...issue.path, ...inner.path] });
  const expected = issue.errors.flat().map((i) => (i.code === "invalid_type" ? i.expected : "?"));
  return {
    code: "invalid_type",
    expected: expected.join(" or ") as "string",
    path: issue.path,
    input: issue.input,
    message: `expected ${expected.join(" or ")}`,
  };
}

/** A short reason in our words, without zod's "Invalid input:" prefix. */
export function issueMessage(issue: Issue): string {
  switch (issue.code) {
    case "invalid_type":
      return `expected ${issue.expected === "int" ? "an integer" : issue.expected}, got ${describe(issue.input)}`;
    case "invalid_value":
      return `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "too_small":
      if (issue.origin === "array") return `expected at least ${String(issue.minimum)} item(s)`;
      if (issue.origin === "string") return `expected at least ${String(issue.minimum)} character(s)`;
      return `expected a value ${issue.inclusive ? ">=" : ">"} ${String(issue.minimum)}`;
    case "too_big":
      if (issue.origin === "array") return `expected at most ${String(issue.maximum)} item(s)`;
      if (issue.origin === "string") return `expected at most ${String(issue.maximum)} characters`;
      return `expected a value ${issue.inclusive ? "<=" : "<"} ${String(issue.maximum)}`;
    default:
      return issue.message;
  }
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "number") {
    if (!Number.isFinite(value)) return "a number out of range";
    return Number.isInteger(value) ? "an integer" : `the fraction ${value}`;
  }
  if (typeof value === "string") return `the string ${JSON.stringify(value.length > 40 ? value.slice(0, 40) + "…" : value)}`;
  return `a ${typeof value}`;
}
