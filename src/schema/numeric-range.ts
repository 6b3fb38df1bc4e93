// Numeric bounds (`minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`) as GBNF, digit by digit the way
// llama.cpp's json-schema-to-grammar builds its integer ranges (written anew here): integers exactly, other numbers
// as a whole part in range followed by an optional fraction, which generates a subset of the values in range.
import type { Obj } from "./keywords.ts";

/** The integer type's own range: a bound at or beyond it is no bound (zod's `.int()` sends ±(2^53 − 1)). */
export const SAFE = Number.MAX_SAFE_INTEGER;
const FRACTION = `"." [0-9]{1,15}`;

export interface Bound {
  value: number;
  exclusive: boolean;
}
export interface Bounds {
  lower?: Bound;
  upper?: Bound;
}

/** The bounds a schema sets, draft-04's boolean `exclusiveMinimum`/`exclusiveMaximum` included; the tighter of two wins. */
export function boundsOf(s: Obj): Bounds {
  const out: Bounds = {};
  const tighter = (side: "lower" | "upper", b: Bound) => {
    const cur = out[side];
    const sign = side === "lower" ? 1 : -1;
    if (!cur || sign * (b.value - cur.value) > 0 || (b.value === cur.value && b.exclusive)) out[side] = b;
  };
  if (typeof s.minimum === "number") tighter("lower", { value: s.minimum, exclusive: s.exclusiveMinimum === true });
  if (typeof s.maximum === "number") tighter("upper", { value: s.maximum, exclusive: s.exclusiveMaximum === true });
  if (typeof s.exclusiveMinimum === "number") tighter("lower", { value: s.exclusiveMinimum, exclusive: true });
  if (typeof s.exclusiveMaximum === "number") tighter("upper", { value: s.exclusiveMaximum, exclusive: true });
  return out;
}

/** The whole numbers the bounds admit, within the integer type's own range ([lo, hi]; lo > hi when none). */
export function integerRange({ lower, upper }: Bounds): [number, number] {
  const lo = lower === undefined ? -SAFE : lower.exclusive ? Math.floor(lower.value) + 1 : Math.ceil(lower.value);
  const hi = upper === undefined ? SAFE : upper.exclusive ? Math.ceil(upper.value) - 1 : Math.floor(upper.value);
  return [Math.max(lo, -SAFE), Math.min(hi, SAFE)];
}

/** GBNF for the integers in [lo, hi] (lo ≤ hi, both safe integers), without leading zeros or "-0". */
export function integerGbnf(lo: number, hi: number): string {
  const alts: string[] = [];
  if (lo < 0) alts.push(`"-" ${naturalGbnf(Math.max(1, -Math.min(hi, -1)), -lo)}`);
  if (hi >= 0) alts.push(naturalGbnf(Math.max(lo, 0), hi));
  return alts.length === 1 ? alts[0]! : `( ${alts.join(" | ")} )`;
}

/**
 * GBNF for the numbers in range that are written as an integer, or as a whole part k and a fraction (k.ddd lies in
 * [k, k+1), and -k.ddd in (-(k+1), -k]); undefined when the range holds none of those (it is narrower than 1).
 */
export function numberGbnf(bounds: Bounds): string | undefined {
  const [lo, hi] = integerRange(bounds);
  const alts: string[] = [];
  if (lo <= hi) alts.push(integerGbnf(lo, hi));
  // k.ddd for k >= 0: k at or above the lower bound (above it when exclusive, as .000 is k itself), k + 1 <= the upper
  const kLo = Math.max(0, lo);
  const kHi = bounds.upper === undefined ? SAFE - 1 : Math.min(SAFE - 1, Math.floor(bounds.upper.value) - 1);
  if (kLo <= kHi) alts.push(`${naturalGbnf(kLo, kHi)} ${FRACTION}`);
  // -k.ddd for k >= 0: -k within the upper bound, -(k + 1) at or above the lower one
  const { upper, lower } = bounds;
  const nLo = Math.max(0, upper === undefined ? 0 : upper.exclusive ? Math.floor(-upper.value) + 1 : Math.ceil(-upper.value));
  const nHi = lower === undefined ? SAFE - 1 : Math.min(SAFE - 1, Math.floor(-lower.value) - 1);
  if (nLo <= nHi) alts.push(`"-" ${naturalGbnf(nLo, nHi)} ${FRACTION}`);
  if (alts.length === 0) return undefined;
  return alts.length === 1 ? alts[0]! : `( ${alts.join(" | ")} )`;
}

/** GBNF for the whole numbers in [lo, hi] (0 ≤ lo ≤ hi), one alternative per digit count. */
export function naturalGbnf(lo: number, hi: number): string {
  const alts: string[] = [];
  for (let digits = String(lo).length; digits <= String(hi).length; digits++) {
    const from = Math.max(lo, digits === 1 ? 0 : 10 ** (digits - 1));
    const to = Math.min(hi, 10 ** digits - 1);
    if (from <= to) alts.push(sameLength(String(from), String(to)));
  }
  return alts.length === 1 ? alts[0]! : `( ${alts.join(" | ")} )`;
}

/** Digit strings of one length between `lo` and `hi`: at most two branches per digit, so O(digits²) text. */
function sameLength(lo: string, hi: string): string {
  if (lo.length === 0) return "";
  const rest = lo.length - 1;
  const any = rest > 0 ? ` [0-9]{${rest}}` : "";
  if (/^0*$/.test(lo.slice(1)) && /^9*$/.test(hi.slice(1))) return `${digitClass(lo[0]!, hi[0]!)}${any}`;
  if (lo[0] === hi[0]) return `"${lo[0]}" ${sameLength(lo.slice(1), hi.slice(1))}`.trimEnd();
  const alts = [`"${lo[0]}" ${sameLength(lo.slice(1), "9".repeat(rest))}`.trimEnd()];
  const a = Number(lo[0]) + 1, b = Number(hi[0]) - 1;
  if (a <= b) alts.push(`${digitClass(String(a), String(b))}${any}`);
  alts.push(`"${hi[0]}" ${sameLength("0".repeat(rest), hi.slice(1))}`.trimEnd());
  return `( ${alts.join(" | ")} )`;
}

const digitClass = (a: string, b: string) => (a === b ? `"${a}"` : `[${a}-${b}]`);
