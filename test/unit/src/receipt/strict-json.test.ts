// The verifier's JSON reader (src/receipt/strict-json.ts): I-JSON (RFC 7493) only. It must read every text
// JSON.parse reads, to the same value, unless two readers could read it differently (RFC 8259 §4 duplicate names,
// lone surrogates, a byte order mark, numbers a double does not hold exactly), and it must bound its depth.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isExactDouble, MAX_JSON_DEPTH, parseStrictJson, StrictJsonError } from "../../../../src/receipt/strict-json.ts";

/** What the reader makes of `text`: the value, or the kind and message of its refusal. */
function read(text: string): { value: unknown } | { kind: string; message: string } {
  try {
    return { value: parseStrictJson(text) };
  } catch (err) {
    if (!(err instanceof StrictJsonError)) throw err;
    return { kind: err.kind, message: err.message };
  }
}

const refusal = (text: string) => {
  const result = read(text);
  if ("value" in result) throw new Error(`read ${text} as ${JSON.stringify(result.value)}`);
  return result;
};

describe("RFC 8259: what JSON.parse reads, it reads to the same value", () => {
  it("any JSON value of well-formed strings, compact or indented", () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: "grapheme" }), fc.boolean(), (value, indent) => {
        const text = JSON.stringify(value, null, indent ? 2 : undefined);
        expect(parseStrictJson(text)).toStrictEqual(JSON.parse(text));
      }),
      { numRuns: 500 },
    );
  });

  it("any finite double, as JSON.stringify or another exact form writes it", () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Object.is(d, -0)), (d) => {
        expect(parseStrictJson(JSON.stringify(d))).toBe(d);
        // the same value in exponent form, as other writers (Python's repr) put it
        const [mantissa, exponent] = d.toExponential().split("e");
        expect(parseStrictJson(`${mantissa}E${exponent}`)).toBe(d);
      }),
    );
  });

  it("any text: never more lenient than JSON.parse, and a syntax refusal only where JSON.parse refuses too", () => {
    const jsonish = fc.stringMatching(/^[\s{}[\]",:0-9eE.+\-a-z\\u]{0,24}$/);
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: "binary" }), jsonish), (text) => {
        let expected: { value: unknown } | undefined;
        try {
          expected = { value: JSON.parse(text) };
        } catch {
          expected = undefined;
        }
        const result = read(text);
        if ("value" in result) expect(result).toStrictEqual(expected);
        else if (result.kind === "syntax") expect(expected).toBeUndefined();
      }),
      { numRuns: 3000 },
    );
  });

  it("names, escapes and literals as JSON.parse reads them, __proto__ included", () => {
    const text = '{"a\\u0062":"\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00","__proto__":{"x":[true,false,null]},"n":-1.5e-3}';
    const value = parseStrictJson(text) as Record<string, unknown>;
    expect(value).toStrictEqual(JSON.parse(text));
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.keys(value)).toEqual(["ab", "__proto__", "n"]);
  });

  it("refuses what JSON.parse refuses, naming the line and column", () => {
    expect(refusal('{"a":1,}')).toEqual({ kind: "syntax", message: 'expected a name in double quotes at line 1, column 8' });
    expect(refusal('{\n  "a": tru\n}')).toEqual({ kind: "syntax", message: 'unexpected "t" at line 2, column 8' });
    expect(refusal('"a\tb"').kind).toBe("syntax");
    expect(refusal("[01]").kind).toBe("syntax");
    expect(refusal('"\\x"').kind).toBe("syntax");
    expect(refusal("1 2").kind).toBe("syntax");
    expect(refusal("").kind).toBe("syntax");
  });
});

describe("RFC 8259 §4, RFC 7493 §2.3: a name twice in one object", () => {
  it("is refused whichever value comes first, and however the name is spelled", () => {
    expect(refusal('{"content":"forged","content":"signed"}')).toEqual({
      kind: "ambiguous",
      message: 'the name "content" appears twice in one object at line 1, column 21: readers differ on which value counts (RFC 8259 §4)',
    });
    expect(refusal('{"a":1,"a":1}').kind).toBe("ambiguous");
    expect(refusal('{"a":1,"\\u0061":2}').kind).toBe("ambiguous");
    expect(refusal('[{"x":{"__proto__":1,"__proto__":2}}]').kind).toBe("ambiguous");
  });

  it("the same name in different objects is no duplicate", () => {
    expect(parseStrictJson('{"a":{"a":1},"b":[{"a":2},{"a":3}]}')).toEqual({ a: { a: 1 }, b: [{ a: 2 }, { a: 3 }] });
  });
});

describe("RFC 7493 §2.1: strings are Unicode", () => {
  it("a lone surrogate, escaped or raw, is refused; a pair is read", () => {
    for (const text of ['"\\ud800"', '"\\udc00"', '"\\ud800\\u0041"', '"\\ud800x"', '"a\\ude00\\ud83d"', '"\ud800"', '"\udc00\ud800"', '{"\\ud800":1}']) {
      expect(refusal(text).kind, text).toBe("ambiguous");
    }
    expect(refusal('"\\ud800"').message).toBe("a lone surrogate \\ud800 at line 1, column 2: readers replace it, refuse it or keep it (RFC 7493 §2.1)");
    expect(parseStrictJson('"\\ud83d\\ude00 \ud83d\ude00"')).toBe("😀 😀");
  });

  it("a byte order mark before the JSON is refused (RFC 8259 §8.1)", () => {
    expect(refusal('\ufeff{"a":1}')).toEqual({ kind: "ambiguous", message: "a byte order mark (U+FEFF) before the JSON, which RFC 8259 §8.1 forbids" });
    expect(refusal(' \ufeff{"a":1}').kind).toBe("syntax");
  });
});

describe("RFC 7493 §2.2: numbers are IEEE 754 doubles", () => {
  it("a number beyond a double's range or precision, or a negative zero, is refused", () => {
    for (const literal of ["1e400", "-1e400", "1e-400", "12345678901234567890", "9007199254740993", "3.141592653589793238462643383279", "0.1000000000000000000001", "9.00000000000000000001", "-0", "-0.0"]) {
      expect(isExactDouble(literal), literal).toBe(false);
      expect(refusal(`[${literal}]`).kind, literal).toBe("ambiguous");
    }
    expect(refusal("[1e400]").message).toBe("the number 1e400 at line 1, column 2 is not exactly an IEEE 754 double, so readers with other number types read another value (RFC 7493 §2.2)");
  });

  it("the same number written another exact way is read", () => {
    for (const literal of ["0", "0.0", "0e99999999999999999999", "1.50", "1e2", "100.0", "1E-5", "9007199254740992", "1e21", "5e-324", "1.7976931348623157e308", "0.1", "0.7", "123456789012345680000"]) {
      expect(isExactDouble(literal), literal).toBe(true);
      expect(parseStrictJson(literal)).toBe(Number(literal));
    }
  });

  it("an integer is read exactly when the double it reads as writes back as that integer", () => {
    /** The integer JSON.stringify's shortest form of `d` means, in exact arithmetic. */
    const written = (d: number): bigint => {
      const [mantissa, exponent = "0"] = String(d).split("e");
      const [whole, fraction = ""] = mantissa!.split(".");
      return BigInt(whole! + fraction) * 10n ** BigInt(Number(exponent) - fraction.length);
    };
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }), (n) => {
        expect(isExactDouble(n.toString())).toBe(written(Number(n)) === n);
      }),
      { numRuns: 2000 },
    );
    expect(isExactDouble((2n ** 53n + 1n).toString())).toBe(false);
    expect(isExactDouble((2n ** 53n).toString())).toBe(true);
  });
});

describe("bounded work on a hostile file", () => {
  it(`nesting deeper than ${MAX_JSON_DEPTH} levels is refused, not a stack overflow`, () => {
    expect(parseStrictJson(`${"[".repeat(MAX_JSON_DEPTH)}${"]".repeat(MAX_JSON_DEPTH)}`)).toBeInstanceOf(Array);
    expect(refusal(`${"[".repeat(MAX_JSON_DEPTH + 1)}${"]".repeat(MAX_JSON_DEPTH + 1)}`).message).toBe(`the JSON nests deeper than ${MAX_JSON_DEPTH} levels at line 1, column ${MAX_JSON_DEPTH + 1}`);
    expect(refusal(`${'{"a":'.repeat(2_000_000)}1`).kind).toBe("ambiguous");
  });
});
