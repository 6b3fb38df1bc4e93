// A caller's `pattern` as GBNF for the JSON string, read off the RE2 program re2js compiled it to (the pattern is
// bounded already: src/schema/pattern.ts): each instruction that consumes a character becomes a rule "this character,
// then what follows", and what follows is the epsilon closure of its successor, as in a right-linear grammar. The
// grammar generates a subset of the matching strings: the match starts at the first character and the string ends where
// it ends; `\b`, `\B` and a `^` after the start are never taken.
import type { RE2JS } from "re2js";

// re2js's instruction opcodes and empty-width flags (its Inst and Utils classes)
const ALT = 1, ALT_MATCH = 2, CAPTURE = 3, EMPTY_WIDTH = 4, MATCH = 6, NOP = 7, RUNE = 8, RUNE1 = 9, RUNE_ANY = 10, RUNE_ANY_NOT_NL = 11;
const BEGIN_LINE = 1, END_LINE = 2, BEGIN_TEXT = 4, END_TEXT = 8;
const FOLD_CASE = 1;

interface Inst {
  op: number;
  out: number;
  arg: number;
  runes: Int32Array;
}

/** At most this many closure entries are visited: a larger program is refused rather than written out. */
export const MAX_PATTERN_CLOSURE = 20_000;

/**
 * The grammar (or why not), and how many closure entries it took to find out. `width`: how many of its rules llama.cpp
 * may hold alive at once (src/schema/grammar-work.ts counts them).
 */
export type PatternGbnf = ({ ok: true; gbnf: (name: string) => string; width: number } | { ok: false; why: string }) & { visits: number };

/**
 * GBNF for a JSON string the pattern matches, quotes included, as a function of the rule's name (helper rules are
 * named after it): its first line is the rule's body, the rest helper rules.
 */
export function patternGbnf(re: RE2JS): PatternGbnf {
  const prog = (re.re2() as unknown as { prog: { inst: Inst[]; start: number } }).prog;
  const insts = prog.inst;
  let visits = 0;
  // seen[2 * pc + ended] === round: visited in this closure (one array for all of them)
  const seen = new Int32Array(2 * insts.length);
  let round = 0;
  /** The consuming instructions reachable from `pc` without consuming, and whether the string may end there. */
  const closure = (pc: number, atStart: boolean): { next: number[]; accept: boolean } | undefined => {
    const next: number[] = [];
    let accept = false;
    round++;
    const stack = [2 * pc]; // 2 * pc + 1: past an end anchor
    while (stack.length > 0) {
      const key = stack.pop()!;
      if (seen[key] === round) continue;
      seen[key] = round;
      if (++visits > MAX_PATTERN_CLOSURE) return undefined;
      const at = key >> 1, ended = key & 1;
      const inst = insts[at]!;
      switch (inst.op) {
        case ALT:
        case ALT_MATCH:
          stack.push(2 * inst.out + ended, 2 * inst.arg + ended);
          break;
        case CAPTURE:
        case NOP:
          stack.push(2 * inst.out + ended);
          break;
        case EMPTY_WIDTH: {
          const begin = inst.arg & (BEGIN_LINE | BEGIN_TEXT), end = inst.arg & (END_LINE | END_TEXT);
          if (inst.arg & ~(BEGIN_LINE | BEGIN_TEXT | END_LINE | END_TEXT)) break; // \b, \B: not taken
          if (begin && !atStart) break;
          stack.push(2 * inst.out + (end !== 0 ? 1 : ended));
          break;
        }
        case MATCH:
          accept = true;
          break;
        case RUNE:
        case RUNE1:
        case RUNE_ANY:
        case RUNE_ANY_NOT_NL:
          if (!ended) next.push(at);
          break;
        default: // FAIL, and lookbehind instructions: not taken
      }
    }
    return { next: next.sort((a, b) => a - b), accept };
  };

  // which consuming instructions can still reach the end of a match (the rest are dropped)
  const follows = new Map<number, { next: number[]; accept: boolean }>();
  const start = closure(prog.start, true);
  if (!start) return tooLarge(visits);
  const pending = [...start.next];
  while (pending.length > 0) {
    const pc = pending.pop()!;
    if (follows.has(pc)) continue;
    const after = closure(insts[pc]!.out, false);
    if (!after) return tooLarge(visits);
    follows.set(pc, after);
    pending.push(...after.next);
  }
  // live: can still reach the end of a match; found backwards from the instructions after which it may end
  const before = new Map<number, number[]>();
  for (const [pc, after] of follows) for (const n of after.next) before.set(n, [...(before.get(n) ?? []), pc]);
  const live = new Set<number>();
  const back = [...follows].filter(([, after]) => after.accept).map(([pc]) => pc);
  while (back.length > 0) {
    const pc = back.pop()!;
    if (live.has(pc)) continue;
    live.add(pc);
    back.push(...(before.get(pc) ?? []));
  }
  const alternatives = (c: { next: number[]; accept: boolean }, name: string) => {
    const refs = c.next.filter((n) => live.has(n)).map((n) => `${name}-i${n}`);
    if (refs.length === 0) return c.accept ? "" : undefined;
    const group = refs.length === 1 ? refs[0]! : `( ${refs.join(" | ")} )`;
    return c.accept ? `${group}?` : group;
  };
  if (alternatives(start, "x") === undefined) return { ok: false, why: "matches no string the grammar can generate (it needs \\b, \\B or a ^ after the start)", visits };
  const { width, visits: spent } = widthOf(start.next, follows, live, MAX_PATTERN_CLOSURE - visits);
  visits += spent;
  return {
    ok: true,
    visits,
    width,
    gbnf: (name) => {
      const classes = new Map<string, string>();
      // instructions of one class share its runes array: write each once
      const texts = new Map<Int32Array | string, string>();
      const charText = (inst: Inst) => {
        const key = inst.runes.length > 1 ? inst.runes : `${inst.op}:${inst.arg & FOLD_CASE}:${inst.runes[0]}`;
        let text = texts.get(key);
        if (text === undefined) texts.set(key, (text = charGbnf(inst)));
        return text;
      };
      const classRef = (text: string) => {
        let ref = classes.get(text);
        if (!ref) classes.set(text, (ref = `${name}-c${classes.size}`));
        return ref;
      };
      const rules = [...live].sort((a, b) => a - b).map((pc) => {
        const rest = alternatives(follows.get(pc)!, name)!;
        return `${name}-i${pc} ::= ${classRef(charText(insts[pc]!))}${rest ? ` ${rest}` : ""}`;
      });
      const body = `"\\"" ${alternatives(start, name) || ""} "\\""`.replace(/ {2}/, " ");
      return [body, ...rules, ...[...classes].map(([text, ref]) => `${ref} ::= ${text}`)].join("\n");
    },
  };
}

/**
 * The most rules alive at once: a string's first k characters leave alive only rules k characters from the start, so
 * the largest such layer bounds it (`[a-z]{1,100}` has 1, `[ab]*a[ab]{20}` 21). The layers repeat once a set recurs;
 * past `limit` visits, every rule is counted.
 */
function widthOf(first: readonly number[], follows: ReadonlyMap<number, { next: number[] }>, live: ReadonlySet<number>, limit: number): { width: number; visits: number } {
  let layer = first.filter((pc) => live.has(pc));
  let width = layer.length;
  let visits = 0;
  const seen = new Set<string>();
  while (layer.length > 0 && !seen.has(layer.join())) {
    seen.add(layer.join());
    const next = new Set<number>();
    for (const pc of layer) {
      for (const n of follows.get(pc)!.next) if (live.has(n)) next.add(n);
      visits += follows.get(pc)!.next.length + 1;
    }
    if (visits > limit) return { width: live.size, visits };
    layer = [...next].sort((a, b) => a - b);
    width = Math.max(width, layer.length);
  }
  return { width, visits };
}

const tooLarge = (visits: number): PatternGbnf => ({ ok: false, why: `needs more than ${MAX_PATTERN_CLOSURE} steps to write as a grammar`, visits });

/** The code point ranges an instruction consumes. */
function ranges(inst: Inst): [number, number][] {
  if (inst.op === RUNE_ANY) return [[0, 0x10ffff]];
  // JavaScript's `.` also stops at \r, U+2028 and U+2029: leave them out so zod's RegExp agrees
  if (inst.op === RUNE_ANY_NOT_NL) return [[0, 0x09], [0x0b, 0x0c], [0x0e, 0x2027], [0x202a, 0x10ffff]];
  const runes = Array.from(inst.runes);
  if (runes.length === 1) {
    const r = runes[0]!;
    if (!(inst.arg & FOLD_CASE)) return [[r, r]];
    const ch = String.fromCodePoint(r);
    return [...new Set([r, ch.toLowerCase().codePointAt(0)!, ch.toUpperCase().codePointAt(0)!])].map((c) => [c, c]);
  }
  const out: [number, number][] = [];
  for (let i = 0; i + 1 < runes.length; i += 2) out.push([runes[i]!, runes[i + 1]!]);
  return out;
}

const SHORT: Record<number, string> = { 0x08: "\\b", 0x09: "\\t", 0x0a: "\\n", 0x0c: "\\f", 0x0d: "\\r", 0x22: '\\"', 0x5c: "\\\\" };

/** GBNF for one character as JSON writes it inside a string: raw where it may be, escaped where it must be. */
function charGbnf(inst: Inst): string {
  const raw: string[] = [];
  const escaped: string[] = [];
  for (const [lo, hi] of ranges(inst)) {
    // control characters, '"' and '\' only as escapes; surrogates never (they are not characters)
    for (let c = lo; c <= Math.min(hi, 0x1f); c++) escaped.push(SHORT[c] ?? `\\u${c.toString(16).padStart(4, "0")}`);
    for (const special of [0x22, 0x5c]) if (lo <= special && special <= hi) escaped.push(SHORT[special]!);
    const pieces: [number, number][] = [[Math.max(lo, 0x20), hi]];
    const cut = (at: number, to = at) => {
      const [a, b] = pieces.pop()!;
      if (a < at) pieces.push([a, Math.min(b, at - 1)]);
      if (b > to) pieces.push([Math.max(a, to + 1), b]);
    };
    if (pieces[0]![0] <= pieces[0]![1]) {
      for (const [a, b] of [[0x22, 0x22], [0x5c, 0x5c], [0xd800, 0xdfff]] as const) if (pieces.length > 0 && pieces.at(-1)![0] <= b && a <= pieces.at(-1)![1]) cut(a, b);
      for (const [a, b] of pieces) if (a <= b) raw.push(a === b ? point(a) : `${point(a)}-${point(b)}`);
    }
  }
  const alts = [...(raw.length > 0 ? [`[${raw.join("")}]`] : []), ...escaped.map((e) => JSON.stringify(e))];
  return alts.length === 1 ? alts[0]! : `( ${alts.join(" | ")} )`;
}

/** One code point inside a GBNF class: letters and digits as they are, the rest escaped. */
const point = (c: number) => (/[A-Za-z0-9]/.test(String.fromCodePoint(c)) ? String.fromCodePoint(c) : c > 0xffff ? `\\U${c.toString(16).padStart(8, "0")}` : `\\u${c.toString(16).padStart(4, "0")}`);
