// A caller's `pattern` (and `patternProperties` key) on a linear-time engine: re2js, the pure-JS port of RE2, so
// no pattern can backtrack for seconds the way JavaScript's RegExp does on `^(a|aa)+$`. RE2 has no backreferences
// and no lookaround; a pattern that needs them is named in the refusal.
import { RE2JS, RE2JSException } from "re2js";

/** Longer patterns are refused before they are compiled (RE2 bounds its program, this bounds the parse). */
export const MAX_PATTERN_LENGTH = 1000;

export type PatternResult = { ok: true; re: RE2JS } | { ok: false; why: string };

/** Why RE2 refused a pattern, in the caller's terms: the ECMA-262 feature it has no linear-time form of. */
function refusal(pattern: string, err: RE2JSException): string {
  if (/\(\?<?[=!]/.test(pattern)) return "uses a lookaround ((?=, (?!, (?<=, (?<!), which a linear-time (RE2) engine cannot match";
  if (/\\[1-9]|\\k</.test(pattern)) return "uses a backreference (\\1, \\k<name>), which a linear-time (RE2) engine cannot match";
  return `is not a regular expression RE2 accepts: ${err.message.replace(/^error parsing regexp: /, "")}`;
}

/** The pattern compiled for RE2 (ECMA-262 spellings such as `(?<name>` and `\u0041` translated first), or why not. */
export function compilePattern(pattern: string): PatternResult {
  if (pattern.length > MAX_PATTERN_LENGTH) return { ok: false, why: `is ${pattern.length} characters long; at most ${MAX_PATTERN_LENGTH} are allowed (limit pattern_length)` };
  try {
    return { ok: true, re: RE2JS.compile(RE2JS.translateRegExp(pattern)) };
  } catch (err) {
    if (err instanceof RE2JSException) return { ok: false, why: refusal(pattern, err) };
    throw err;
  }
}
