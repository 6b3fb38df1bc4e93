// svc's own GBNF rules for numeric bounds and string formats (src/schema/numeric-range.ts, formats.ts), read as
// regular expressions (the GBNF they use is literals, classes, groups, alternation, ? and {n,m}), and how the
// schema walk hands them to the grammar (src/schema/prepare.ts, agent/engine/grammar/json-grammar.ts).
import { z } from "zod";
import { describe, expect, it } from "vitest";
import { boundsOf, integerGbnf, integerRange, numberGbnf, SAFE } from "../../../../src/schema/numeric-range.ts";
import { FORMAT_LENGTHS, formatGbnf, GRAMMAR_FORMATS } from "../../../../src/schema/formats.ts";
import { prepareSchema, strictRefusal } from "../../../../src/schema/prepare.ts";
import { validate } from "../../../../src/schema/validate.ts";
import { ZOD_FORMAT_PATTERNS } from "../../../../src/schema/zod-patterns.ts";
import { withRules } from "../../../../agent/engine/grammar/json-grammar.ts";
import { SchemaBudget } from "../../../../src/schema/bounds.ts";
import { MAX_PATTERN_CLOSURE } from "../../../../src/schema/pattern-grammar.ts";

/** The GBNF subset these rules use, as an anchored RegExp. */
function gbnfRegExp(gbnf: string): RegExp {
  let out = "";
  for (let i = 0; i < gbnf.length; i++) {
    const ch = gbnf[i]!;
    if (ch === '"') {
      let j = i + 1, text = "";
      for (; gbnf[j] !== '"'; j++) text += gbnf[j] === "\\" ? gbnf[++j] : gbnf[j];
      out += text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      i = j;
    } else if (ch === "[") {
      const j = gbnf.indexOf("]", i + 2);
      out += gbnf.slice(i, j + 1);
      i = j;
    } else if (ch !== " ") out += ch === "{" ? gbnf.slice(i, (i = gbnf.indexOf("}", i)) + 1) : ch;
  }
  return new RegExp(`^(?:${out})$`, "u");
}

const integers = (lo: number, hi: number) => gbnfRegExp(integerGbnf(lo, hi));

describe("Structured output: numeric bounds", () => {
  it("integer ranges match exactly the integers in range, written without leading zeros or -0", () => {
    const ranges: [number, number][] = [[0, 0], [0, 9], [1, 10], [7, 123], [-5, 5], [-120, -7], [-1, 0], [99, 1000], [1234, 56789], [-305, 2017]];
    for (const [lo, hi] of ranges) {
      const re = integers(lo, hi);
      for (let n = lo - 150; n <= hi + 150; n++) expect(re.test(String(n)), `${n} in [${lo}, ${hi}]`).toBe(n >= lo && n <= hi);
      for (const text of ["-0", "00", `0${Math.abs(lo)}`, "", "1e1"]) if (text !== "0" && text !== String(lo)) expect(re.test(text), text).toBe(false);
    }
  });

  it("zod's .int() bounds, ±(2^53 − 1), are the integer type's own range, matched to the last digit", () => {
    const [lo, hi] = integerRange(boundsOf(z.toJSONSchema(z.number().int()) as Record<string, unknown>));
    expect([lo, hi]).toEqual([-SAFE, SAFE]);
    const re = integers(lo, hi);
    for (const ok of ["0", "9007199254740991", "-9007199254740991", "9007199254740990", "8999999999999999", "123"]) expect(re.test(ok), ok).toBe(true);
    for (const no of ["9007199254740992", "-9007199254740992", "9999999999999999", "10000000000000000", "1.5"]) expect(re.test(no), no).toBe(false);
    expect(integerRange(boundsOf({ minimum: -1e300, maximum: 1e300 }))).toEqual([-SAFE, SAFE]);
  });

  it("exclusive bounds (2020-12 numbers and draft-04 booleans) and fractional bounds", () => {
    expect(integerRange(boundsOf({ exclusiveMinimum: 0, exclusiveMaximum: 10 }))).toEqual([1, 9]);
    expect(integerRange(boundsOf({ minimum: 0, exclusiveMinimum: true, maximum: 10, exclusiveMaximum: true }))).toEqual([1, 9]);
    expect(integerRange(boundsOf({ minimum: 0.5, maximum: 3.5 }))).toEqual([1, 3]);
    expect(integerRange(boundsOf({ minimum: 3, exclusiveMinimum: 5 }))).toEqual([6, SAFE]);
  });

  it("numbers: every text the rule admits is in range", () => {
    const cases = [{ minimum: 0.5, maximum: 3 }, { minimum: -2.5, maximum: 2.5 }, { exclusiveMinimum: 0, maximum: 1 }, { minimum: -10, exclusiveMaximum: -3 }, { minimum: 0 }, { maximum: -1.5 }];
    const texts = ["0", "1", "-1", "0.5", "0.25", "2.999", "3", "3.0", "-0.5", "-2.4", "-2.5", "-2.6", "2.5", "-10", "-9.999", "-3", "-3.5", "-4.0", "-1.5", "-1.6", "12.75", "-0.0"];
    for (const schema of cases) {
      const re = gbnfRegExp(numberGbnf(boundsOf(schema))!);
      for (const t of texts) if (re.test(t)) expect(validate(Number(t), { type: "number", ...schema }), `${t} for ${JSON.stringify(schema)}`).toEqual([]);
    }
    expect(gbnfRegExp(numberGbnf(boundsOf({ minimum: 0.5, maximum: 3 }))!).test("2.75")).toBe(true);
    expect(numberGbnf(boundsOf({ minimum: 0.1, maximum: 0.2 }))).toBeUndefined();
  });
});

describe("Structured output: formats", () => {
  const samples: Record<string, [string[], string[]]> = {
    date: [["2024-02-28", "0001-12-09"], ["2024-02-30", "2024-13-01", "24-01-01"]],
    time: [["23:59:59Z", "00:00:00.5+01:00"], ["24:00:00Z", "12:00:00"]],
    "date-time": [["2024-01-28T12:30:00Z", "1999-12-28T00:00:00.123Z"], ["2024-01-28 12:30:00Z", "2024-01-28T12:30:00+01:00", "2024-01-31T12:30:00Z"]],
    duration: [["P1D", "P1Y2M3DT4H5M6S", "PT5M", "P3W"], ["P", "PT", "P1DT", "P1W1D"]],
    email: [["a@b.co", "first.last+tag@mail.example.org"], ["a@b", ".a@b.co", "a..b@c.de", "a@-b.co"]],
    hostname: [["example", "a-1.example.com"], ["-a.com", "a..b", "a_b"]],
    ipv4: [["0.0.0.0", "255.255.255.255", "10.0.12.199"], ["256.0.0.1", "01.2.3.4", "1.2.3"]],
    ipv6: [["2001:db8:0:0:0:0:0:1"], ["::1", "2001:db8::1:2:3:4:5:6:7"]],
    uuid: [["123e4567-e89b-12d3-a456-426614174000"], ["123e4567-e89b-02d3-a456-426614174000", "123e4567e89b12d3a456426614174000"]],
  };

  it("each of OpenAI strict mode's formats, a subset of what the format, zod and validate() admit", () => {
    expect([...GRAMMAR_FORMATS].sort()).toEqual(Object.keys(samples).sort());
    for (const [format, [good, badOnes]] of Object.entries(samples)) {
      const re = gbnfRegExp(formatGbnf(format));
      for (const text of good) {
        expect(re.test(JSON.stringify(text)), `${format} ${text}`).toBe(true);
        expect(validate(text, { type: "string", format }), `${format} ${text}`).toEqual([]);
        for (const pattern of ZOD_FORMAT_PATTERNS[format] ?? []) expect(new RegExp(pattern, "u").test(text), `${format} ${text} ${pattern}`).toBe(true);
      }
      for (const text of badOnes) expect(re.test(JSON.stringify(text)), `${format} ${text}`).toBe(false);
    }
  });

  it("each format's lengths are what its grammar writes at the fewest and most, so a length beside it can be judged", () => {
    const longest: Record<string, string> = {
      date: "2024-12-28", time: "23:59:59.123456+05:30", "date-time": "2024-12-28T23:59:59.123456Z", duration: "P1234Y1234M1234DT1234H1234M1234S",
      email: `${["a".repeat(20), "b".repeat(20), "c".repeat(20)].join(".")}@${["d".repeat(20), "e".repeat(20), "f".repeat(20)].join(".")}.abcdef`,
      hostname: ["a".repeat(20), "b".repeat(20), "c".repeat(20), "d".repeat(20)].join("."), ipv4: "255.255.255.255", ipv6: "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", uuid: "123e4567-e89b-12d3-a456-426614174000",
    };
    const shortest: Record<string, string> = { date: "2024-12-28", time: "00:00:00Z", "date-time": "2024-12-28T00:00:00Z", duration: "P1D", email: "a@b.cd", hostname: "a", ipv4: "0.0.0.0", ipv6: "0:0:0:0:0:0:0:0", uuid: longest.uuid! };
    for (const format of GRAMMAR_FORMATS) {
      const re = gbnfRegExp(formatGbnf(format));
      for (const text of [shortest[format]!, longest[format]!]) expect(re.test(JSON.stringify(text)), `${format} ${text}`).toBe(true);
      expect(re.test(JSON.stringify(`${longest[format]}0`)), `${format}: one character past the longest`).toBe(false);
      expect(FORMAT_LENGTHS[format]).toEqual([shortest[format]!.length, longest[format]!.length]);
    }
    expect(strictRefusal(z.toJSONSchema(z.email().max(255)))).toBeUndefined();
    expect(strictRefusal(z.toJSONSchema(z.email().max(40)))).toMatchObject({ keyword: "maxLength", note: "beside format: its strings are 6 to 132 characters long" });
  });

  it("the patterns zod writes beside each format are the ones svc knows (a zod upgrade that changes one fails here)", () => {
    const written = [z.email(), z.uuid(), z.guid(), z.iso.datetime(), z.iso.datetime({ offset: true }), z.iso.date(), z.iso.duration(), z.hostname(), z.ipv4(), z.ipv6()]
      .map((s) => z.toJSONSchema(s) as { format: string; pattern: string });
    for (const { format, pattern } of written) expect(ZOD_FORMAT_PATTERNS[format], format).toContain(pattern);
  });
});

describe("Structured output: the schema walk", () => {
  const schema = z.toJSONSchema(
    z.object({ n: z.number().int(), e: z.email(), u: z.uuid(), d: z.iso.datetime(), age: z.number().int().min(0).max(150), x: z.number().min(0.5).max(3), tags: z.array(z.enum(["a", "b"])) }),
  );

  it("zod's int, email, uuid and date-time pass strict mode, each keyword enforced", () => {
    expect(strictRefusal(schema)).toBeUndefined();
    const uses = prepareSchema(schema).uses;
    for (const path of ["/properties/n/minimum", "/properties/e/format", "/properties/e/pattern", "/properties/u/pattern", "/properties/x/maximum"]) {
      expect(uses.find((u) => u.path === path)?.kind, path).toBe("enforced");
    }
  });

  it("each rule stands in the schema as a placeholder const, one per distinct rule, and the grammar gets it back", () => {
    const { schema: out, rules } = prepareSchema({ type: "object", properties: { a: { type: "integer", minimum: 0 }, b: { type: "integer", minimum: 0 }, c: { type: "string", format: "uuid" } } });
    expect(rules.map((r) => r.name)).toEqual(["svcgbnf0", "svcgbnf1"]);
    expect(out).toMatchObject({ properties: { a: { const: "svcgbnf0" }, b: { const: "svcgbnf0" }, c: { const: "svcgbnf1" } } });
    const gbnf = withRules('root ::= "{" "\\"svcgbnf0\\"" "," "\\"svcgbnf1\\"" "}"', rules);
    expect(gbnf.split("\n")).toEqual(['root ::= "{" svcgbnf0 "," svcgbnf1 "}"', `svcgbnf0 ::= ${rules[0]!.gbnf}`, `svcgbnf1 ::= ${rules[1]!.gbnf}`]);
  });

  it("a placeholder name never collides with a string the caller's schema holds", () => {
    const { rules } = prepareSchema({ type: "object", properties: { a: { enum: ["svcgbnf0", "svcgbnfx0"] }, b: { type: "integer", maximum: 3 } } });
    expect(rules.map((r) => r.name)).toEqual(["svcgbnfxx0"]);
  });

  it("what the grammar still cannot enforce is refused by name: \\b, another pattern beside a format, sub-unit number ranges, length beside a format", () => {
    expect(strictRefusal({ type: "string", pattern: "^[a-z]+$" })).toBeUndefined();
    expect(strictRefusal({ type: "string", pattern: "\\bfoo" })).toMatchObject({ keyword: "pattern", path: "/pattern" });
    expect(strictRefusal({ type: "string", format: "email", pattern: "^.+@x\\.org$" })).toMatchObject({ keyword: "pattern" });
    expect(strictRefusal({ type: "number", minimum: 0.1, maximum: 0.2 })).toMatchObject({ keyword: "minimum" });
    expect(strictRefusal({ type: "string", format: "uuid", maxLength: 10 })).toMatchObject({ keyword: "maxLength" });
    expect(strictRefusal({ type: "string", pattern: "^a+$", maxLength: 10 })).toMatchObject({ keyword: "maxLength", note: "beside pattern" });
    expect(strictRefusal({ type: "string", format: "uri" })).toMatchObject({ keyword: "format" });
  });
});

describe("Structured output: patterns", () => {
  const rulesOf = (pattern: string) => prepareSchema({ type: "string", pattern }).rules;

  it("each character-consuming RE2 instruction is a rule: its character, then the closure of what follows", () => {
    expect(rulesOf("^[a-z]+$")).toEqual([{ name: "svcgbnf0", gbnf: ['"\\"" svcgbnf0-i2 "\\""', "svcgbnf0-i2 ::= svcgbnf0-c0 svcgbnf0-i2?", "svcgbnf0-c0 ::= [a-z]"].join("\n"), width: 1 }]);
    // unanchored: the match starts at the first character and the string ends with it; an empty match is an empty string
    expect(rulesOf("a|b*")[0]!.gbnf.split("\n")[0]).toBe('"\\"" ( svcgbnf0-i1 | svcgbnf0-i2 )? "\\""');
  });

  it("its width is the most of its rules llama.cpp may hold alive at once: the largest set the first k characters reach", () => {
    expect(rulesOf("^[a-z]{1,100}$")[0]!.width).toBe(1);
    expect(rulesOf("^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}$")[0]!.width).toBe(1);
    // each "a" may be the one before the last 20 characters: the loop, the "a" and each of the 20 after it at once
    expect(rulesOf("^[ab]*a[ab]{20}$")[0]!.width).toBe(22);
  });

  it("characters JSON must escape are written as escapes; surrogates never; . leaves out what JavaScript's . does", () => {
    const [rule] = rulesOf('^["\\\\\\n]$');
    expect(rule!.gbnf).toContain(String.raw`svcgbnf0-c0 ::= ( "\\n" | "\\\"" | "\\\\" )`);
    const dot = rulesOf("^.$")[0]!.gbnf;
    expect(dot).toContain("\\u0023-\\u005b\\u005d-\\u2027\\u202a-\\ud7ff\\ue000-\\U0010ffff]");
    expect(dot).not.toContain('"\\n"');
    expect(dot).not.toContain('"\\r"');
  });

  it("the work is bounded: a program whose closures are too large is refused by name, its visits charged to the budget", () => {
    const pattern = "^(a?){450}$";
    expect(strictRefusal({ type: "string", pattern })).toMatchObject({ keyword: "pattern", note: `needs more than ${MAX_PATTERN_CLOSURE} steps to write as a grammar` });
    // the budget is private: spend what is left 100 steps at a time
    const left = (b: SchemaBudget) => {
      let n = 0;
      try {
        for (;;) b.step("", 100), (n += 100);
      } catch {
        return n;
      }
    };
    const walked = new SchemaBudget();
    prepareSchema({ type: "string", pattern }, walked);
    const compiled = new SchemaBudget();
    compiled.pattern(pattern, "/pattern");
    expect(left(compiled) - left(walked)).toBeGreaterThanOrEqual(MAX_PATTERN_CLOSURE / 16 - 100);
  });

  it("zod's own formats (starts_with, nanoid, …), which JSON Schema does not define, are annotations beside the pattern that is zod's check", () => {
    for (const schema of [z.string().startsWith("ab"), z.nanoid(), z.cuid2(), z.ulid(), z.e164()].map((s) => z.toJSONSchema(s))) {
      expect(strictRefusal(schema), JSON.stringify(schema)).toBeUndefined();
      expect(prepareSchema(schema).uses.find((u) => u.keyword === "format")).toMatchObject({ kind: "annotation" });
    }
    // a format JSON Schema defines stays refused, and so does an unknown one with no pattern to enforce
    expect(strictRefusal(z.toJSONSchema(z.url()))).toMatchObject({ keyword: "format" });
    expect(strictRefusal({ type: "string", format: "nanoid" })).toMatchObject({ keyword: "format" });
    expect(strictRefusal({ type: "string", format: "nanoid", pattern: "\\bx" })).toMatchObject({ keyword: "format" });
  });

  it("one rule per distinct pattern; the same pattern twice is built once", () => {
    const { rules, schema } = prepareSchema({ type: "object", properties: { a: { type: "string", pattern: "^x+$" }, b: { type: "string", pattern: "^x+$" }, c: { type: "string", pattern: "^y$" } } });
    expect(rules).toHaveLength(2);
    expect(schema).toMatchObject({ properties: { a: { const: "svcgbnf0" }, b: { const: "svcgbnf0" }, c: { const: "svcgbnf1" } } });
  });
});
