// A caller's `pattern` (and `patternProperties` key) on a linear-time engine: re2js, the pure-JS port of RE2, so
// no pattern can backtrack for seconds the way JavaScript's RegExp does on `^(a|aa)+$`. RE2 has no backreferences
// and no lookaround; a pattern that needs them is named in the refusal.
import { RE2JS, RE2JSException } from "re2js";

/** Longer patterns are refused before they are compiled. */
export const MAX_PATTERN_LENGTH = 1000;
/** Patterns whose RE2 program would be larger are refused (estimated before compiling, checked after). */
export const MAX_PATTERN_PROGRAM = 2000;

export type PatternResult = { ok: true; re: RE2JS } | { ok: false; why: string };

/** Why RE2 refused a pattern, in the caller's terms: the ECMA-262 feature it has no linear-time form of. */
function refusal(pattern: string, err: RE2JSException): string {
  if (/\(\?<?[=!]/.test(pattern)) return "uses a lookaround ((?=, (?!, (?<=, (?<!), which a linear-time (RE2) engine cannot match";
  if (/\\[1-9]|\\k</.test(pattern)) return "uses a backreference (\\1, \\k<name>), which a linear-time (RE2) engine cannot match";
  return `is not a regular expression RE2 accepts: ${err.message.replace(/^error parsing regexp: /, "")}`;
}

// an escape whose operand is braced (\p{L}, \x{41}, \u{1F600}), and a counted repeat
const BRACED = /\\[pPxu]\{[^}]*\}/y;
const COUNTED = /\{(\d+)(?:,(\d*))?\}/y;

/**
 * An upper estimate of the RE2 program's size, read off the text: each atom (a character, an escape, a class) one
 * instruction, a group the sum of its contents, `{n,m}` multiplying what it repeats. Compiling, and matching each
 * input character, cost in proportion to it, and `(\p{L}|\p{N}){1000}` repeated fifty times compiles for 180 ms.
 */
export function programEstimate(pattern: string): number {
  const frames = [0];
  let last = 0; // the size of the atom a quantifier would repeat
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === "\\") {
      BRACED.lastIndex = i;
      const braced = BRACED.exec(pattern);
      i += braced ? braced[0].length - 1 : 1;
      last = 1;
    } else if (ch === "[") {
      let j = i + 1;
      if (pattern[j] === "^") j++;
      if (pattern[j] === "]") j++;
      while (j < pattern.length && pattern[j] !== "]") j += pattern[j] === "\\" ? 2 : 1;
      i = j;
      last = 1;
    } else if (ch === "(") {
      frames.push(0);
      last = 0;
      continue;
    } else if (ch === ")" && frames.length > 1) {
      last = frames.pop()! + 1;
    } else if (ch === "{") {
      COUNTED.lastIndex = i;
      const counted = COUNTED.exec(pattern);
      if (counted) {
        const times = Math.max(Number(counted[1]), Number(counted[2] || 0));
        frames[frames.length - 1]! += last * Math.max(0, times - 1);
        last *= times;
        i += counted[0].length - 1;
        continue;
      }
      last = 1;
    } else last = 1;
    frames[frames.length - 1]! += last;
  }
  return frames.reduce((sum, n) => sum + n, 0);
}

/** The pattern compiled for RE2 (ECMA-262 spellings such as `(?<name>` and `\u0041` translated first), or why not. */
export function compilePattern(pattern: string): PatternResult {
  if (pattern.length > MAX_PATTERN_LENGTH) return { ok: false, why: `is ${pattern.length} characters long; at most ${MAX_PATTERN_LENGTH} are allowed (schema limit pattern_length)` };
  const estimate = programEstimate(pattern);
  if (estimate > MAX_PATTERN_PROGRAM) return { ok: false, why: tooLarge(estimate) };
  let re: RE2JS;
  try {
    re = RE2JS.compile(RE2JS.translateRegExp(pattern));
  } catch (err) {
    if (err instanceof RE2JSException) return { ok: false, why: refusal(pattern, err) };
    throw err;
  }
  const size = programSize(re);
  return size > MAX_PATTERN_PROGRAM ? { ok: false, why: tooLarge(size) } : { ok: true, re };
}

const tooLarge = (size: number) =>
  `compiles to about ${size} RE2 instructions (each {n,m} multiplies what it repeats); at most ${MAX_PATTERN_PROGRAM} are allowed (schema limit pattern_program)`;

/** The compiled program's instruction count: what one input character can cost to match. */
export const programSize = (re: RE2JS): number => (re.re2() as unknown as { prog: { numInst(): number } }).prog.numInst();
