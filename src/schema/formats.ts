// String `format`s as GBNF for the value's JSON string, quotes included. Each generates a subset of what its format
// admits, chosen to pass the common validators too: a day no later than the 28th is valid in every month, a UUID
// has a version and variant digit, a date-time ends in Z. Beside the `pattern` zod writes for the same format
// (src/schema/zod-patterns.ts), the format's grammar stands for both.

const digits = (n: number) => `[0-9]{${n}}`;
const hex = (n: number) => `[0-9a-f]{${n}}`;
const DATE = `${digits(4)} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | "1" [0-9] | "2" [0-8] )`;
const HOUR = `( [01] [0-9] | "2" [0-3] )`;
const CLOCK = `${HOUR} ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,6} )?`;
const LABEL = `[a-zA-Z0-9] ( [a-zA-Z0-9-]{0,18} [a-zA-Z0-9] )?`;
const OCTET = `( "25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9] )`;
const N = `[0-9]{1,4}`;
// RFC 3339 appendix A (JSON Schema's `duration`): each part at most once, in order, at least one; W alone
const DURATION_DATE = `( ${N} "Y" ( ${N} "M" )? ( ${N} "D" )? | ${N} "M" ( ${N} "D" )? | ${N} "D" )`;
const DURATION_TIME = `"T" ( ${N} "H" ( ${N} "M" )? ( ${N} "S" )? | ${N} "M" ( ${N} "S" )? | ${N} "S" )`;

/** The text between the quotes, per format. */
const BODIES: Record<string, string> = {
  date: DATE,
  time: `${CLOCK} ( "Z" | [+-] ${HOUR} ":" [0-5] [0-9] )`,
  "date-time": `${DATE} "T" ${CLOCK} "Z"`,
  duration: `"P" ( ${N} "W" | ${DURATION_DATE} ( ${DURATION_TIME} )? | ${DURATION_TIME} )`,
  email: `[a-zA-Z0-9_+-]{1,20} ( "." [a-zA-Z0-9_+-]{1,20} ){0,2} "@" ( ${LABEL} "." ){1,3} [a-zA-Z]{2,6}`,
  hostname: `${LABEL} ( "." ${LABEL} ){0,3}`,
  ipv4: `${OCTET} ( "." ${OCTET} ){3}`,
  ipv6: `${hex(1).replace("{1}", "{1,4}")} ( ":" [0-9a-f]{1,4} ){7}`,
  uuid: `${hex(8)} "-" ${hex(4)} "-" [1-8] ${hex(3)} "-" [89ab] ${hex(3)} "-" ${hex(12)}`,
};

/** The formats the grammar generates, OpenAI strict mode's list. */
export const GRAMMAR_FORMATS = new Set(Object.keys(BODIES));

/** The fewest and most characters each format's grammar writes, so a `minLength`/`maxLength` beside it can be judged. */
export const FORMAT_LENGTHS: Record<string, [number, number]> = {
  date: [10, 10],
  time: [9, 21],
  "date-time": [20, 27],
  duration: [3, 32],
  email: [6, 132],
  hostname: [1, 83],
  ipv4: [7, 15],
  ipv6: [15, 39],
  uuid: [36, 36],
};

/** GBNF for a JSON string of `format` (one of GRAMMAR_FORMATS). */
export const formatGbnf = (format: string): string => `"\\"" ${BODIES[format]} "\\""`;
