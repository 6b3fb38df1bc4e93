// Reads JSON that every reader reads the same way (I-JSON, RFC 7493), or says where it is not: a duplicate name
// (RFC 8259 §4 leaves which value counts to the reader), a lone surrogate, a number a double cannot hold exactly, and
// anything JSON.parse refuses. The verifier reads hostile files, so depth is bounded (no stack is exhausted) and work
// is one pass. Portable: part of the verifier in src/receipt/index.ts.

/** Nesting the reader follows: a Responses answer echoes the caller's schemas (64 levels at the gateway) inside tools. */
export const MAX_JSON_DEPTH = 512;

/** Why a text is not read: `syntax` is not JSON at all; `ambiguous` is JSON that two readers could read differently. */
export class StrictJsonError extends Error {
  constructor(
    readonly kind: "syntax" | "ambiguous",
    message: string,
  ) {
    super(message);
  }
}

const WHITESPACE = /[ \t\n\r]*/y;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
/** A run of string characters that need no decoding. */
const PLAIN = /[^"\\\u0000-\u001f]*/y;
const HEX4 = /[0-9a-fA-F]{4}/y;
/** A surrogate code unit that is not half of a pair. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The first surrogate code unit in `text` that is not half of a pair, as `U+D800`, and where it is; or undefined. */
export function findLoneSurrogate(text: string): { unit: string; index: number } | undefined {
  const lone = LONE_SURROGATE.exec(text);
  return lone === null ? undefined : { unit: `U+${lone[0].charCodeAt(0).toString(16).toUpperCase()}`, index: lone.index };
}
const LITERALS: Record<string, boolean | null> = { true: true, false: false, null: null };
const ESCAPES: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

/** The value `text` holds; throws a StrictJsonError naming the place when it is not I-JSON. */
export function parseStrictJson(text: string, maxDepth = MAX_JSON_DEPTH): unknown {
  const lone = findLoneSurrogate(text);
  if (lone !== undefined) throw new StrictJsonError("ambiguous", `a lone surrogate ${lone.unit} ${where(text, lone.index)}, which no UTF-8 text can hold`);
  if (text.charCodeAt(0) === 0xfeff) throw new StrictJsonError("ambiguous", "a byte order mark (U+FEFF) before the JSON, which RFC 8259 §8.1 forbids");
  const reader = new Reader(text, maxDepth);
  reader.space();
  const value = reader.value(0);
  reader.space();
  if (reader.at < text.length) reader.fail("unexpected text after the JSON value");
  return value;
}

/**
 * Whether the number `literal` reads as exactly one IEEE 754 double: finite, and the decimal that double writes as
 * (JSON.stringify's shortest form) is the literal's value. Otherwise a reader with wider numbers (Python's int,
 * a decimal type) and one with doubles read two different numbers: `1e400`, `12345678901234567890`, `0.1000000000000000000001`, `-0`.
 */
export function isExactDouble(literal: string): boolean {
  const value = Number(literal);
  if (!Number.isFinite(value)) return false;
  const shortest = String(value);
  // JSON.stringify writes -0 as 0: a negative zero is a double to one reader and the integer 0 to another
  return shortest === literal || decimalOf(literal) === decimalOf(shortest);
}

/** A decimal number's value as `sign digits e exponent`, without leading or trailing zeros: one form per value. */
function decimalOf(number: string): string {
  const [, sign, whole, fraction = "", exponent = "0"] = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(number)!;
  const digits = (whole! + fraction).replace(/^0+/, "");
  if (digits === "") return `${sign}0`;
  const significant = digits.replace(/0+$/, "");
  return `${sign}${significant}e${BigInt(exponent) - BigInt(fraction.length) + BigInt(digits.length - significant.length)}`;
}

class Reader {
  at = 0;
  constructor(
    private readonly text: string,
    private readonly maxDepth: number,
  ) {}

  space(): void {
    WHITESPACE.lastIndex = this.at;
    WHITESPACE.test(this.text);
    this.at = WHITESPACE.lastIndex;
  }

  value(depth: number): unknown {
    const c = this.text[this.at];
    if (c === "{" || c === "[") {
      if (depth >= this.maxDepth) throw new StrictJsonError("ambiguous", `the JSON nests deeper than ${this.maxDepth} levels ${where(this.text, this.at)}`);
      return c === "{" ? this.object(depth + 1) : this.array(depth + 1);
    }
    if (c === '"') return this.string();
    if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) return this.number();
    const word = c === "t" ? "true" : c === "f" ? "false" : c === "n" ? "null" : undefined;
    if (word !== undefined && this.text.startsWith(word, this.at)) {
      this.at += word.length;
      return LITERALS[word];
    }
    return this.fail(c === undefined ? "unexpected end of the JSON" : `unexpected ${JSON.stringify(c)}`);
  }

  private object(depth: number): Record<string, unknown> {
    const object: Record<string, unknown> = {};
    this.at++;
    this.space();
    if (this.text[this.at] === "}") {
      this.at++;
      return object;
    }
    for (;;) {
      if (this.text[this.at] !== '"') this.fail("expected a name in double quotes");
      const start = this.at;
      const name = this.string();
      // names are compared as the strings they decode to: "a" and "\u0061" are one name
      if (Object.hasOwn(object, name)) throw new StrictJsonError("ambiguous", `the name ${JSON.stringify(name)} appears twice in one object ${where(this.text, start)}: readers differ on which value counts (RFC 8259 §4)`);
      this.space();
      if (this.text[this.at] !== ":") this.fail('expected ":"');
      this.at++;
      this.space();
      // defined, not assigned: "__proto__" is a name like any other, as JSON.parse reads it
      Object.defineProperty(object, name, { value: this.value(depth), enumerable: true, writable: true, configurable: true });
      this.space();
      const next = this.text[this.at++];
      if (next === "}") return object;
      if (next !== ",") this.fail('expected "," or "}"', this.at - 1);
      this.space();
    }
  }

  private array(depth: number): unknown[] {
    const array: unknown[] = [];
    this.at++;
    this.space();
    if (this.text[this.at] === "]") {
      this.at++;
      return array;
    }
    for (;;) {
      array.push(this.value(depth));
      this.space();
      const next = this.text[this.at++];
      if (next === "]") return array;
      if (next !== ",") this.fail('expected "," or "]"', this.at - 1);
      this.space();
    }
  }

  private string(): string {
    const start = this.at;
    this.at++;
    let out = "";
    for (;;) {
      PLAIN.lastIndex = this.at;
      PLAIN.test(this.text);
      out += this.text.slice(this.at, PLAIN.lastIndex);
      this.at = PLAIN.lastIndex;
      const c = this.text[this.at];
      if (c === '"') {
        this.at++;
        return out;
      }
      if (c === undefined) this.fail("a string without its closing quote", start);
      if (c !== "\\") this.fail("a control character in a string (it must be escaped)");
      const escape = this.text[this.at + 1] ?? "";
      if (escape !== "u") {
        if (ESCAPES[escape] === undefined) this.fail(`the escape \\${escape} is not JSON`);
        out += ESCAPES[escape];
        this.at += 2;
        continue;
      }
      const unit = this.unicodeEscape(this.at);
      this.at += 6;
      if (unit >= 0xd800 && unit <= 0xdbff) {
        // a high surrogate counts only with the low one after it, escaped too
        const low = this.text.startsWith("\\u", this.at) ? this.unicodeEscape(this.at) : -1;
        if (low < 0xdc00 || low > 0xdfff) throw this.loneEscape(unit, this.at - 6);
        out += String.fromCharCode(unit, low);
        this.at += 6;
      } else if (unit >= 0xdc00 && unit <= 0xdfff) {
        throw this.loneEscape(unit, this.at - 6);
      } else {
        out += String.fromCharCode(unit);
      }
    }
  }

  private unicodeEscape(at: number): number {
    HEX4.lastIndex = at + 2;
    if (!HEX4.test(this.text)) this.fail("\\u must be followed by four hex digits", at);
    return parseInt(this.text.slice(at + 2, at + 6), 16);
  }

  private loneEscape(unit: number, at: number): StrictJsonError {
    return new StrictJsonError("ambiguous", `a lone surrogate \\u${unit.toString(16)} ${where(this.text, at)}: readers replace it, refuse it or keep it (RFC 7493 §2.1)`);
  }

  private number(): number {
    NUMBER.lastIndex = this.at;
    if (!NUMBER.test(this.text)) this.fail("a number that is not JSON");
    const literal = this.text.slice(this.at, NUMBER.lastIndex);
    if (!isExactDouble(literal)) {
      throw new StrictJsonError("ambiguous", `the number ${literal.length > 40 ? `${literal.slice(0, 40)}…` : literal} ${where(this.text, this.at)} is not exactly an IEEE 754 double, so readers with other number types read another value (RFC 7493 §2.2)`);
    }
    this.at = NUMBER.lastIndex;
    return Number(literal);
  }

  fail(what: string, at = this.at): never {
    throw new StrictJsonError("syntax", `${what} ${where(this.text, at)}`);
  }
}

/** `at line 3, column 14`, counted in characters. */
function where(text: string, at: number): string {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf("\n"); i !== -1 && i < at; i = text.indexOf("\n", i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return `at line ${line}, column ${at - lineStart + 1}`;
}
