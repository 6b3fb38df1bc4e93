// The `ipv6` and `ipv4` formats (src/schema/ip-address.ts) checked without node:net, so that the client runs them:
// held to node:net's isIPv6 and isIPv4 on a table of edge cases and on generated addresses, near-misses and noise.
import { isIPv4 as nodeIsIPv4, isIPv6 as nodeIsIPv6 } from "node:net";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isIPv4, isIPv6 } from "../../../../src/schema/ip-address.ts";

const TABLE: [string, boolean][] = [
  ["::", true],
  ["::1", true],
  ["1::", true],
  ["1:2:3:4:5:6:7:8", true],
  ["1:2:3:4:5:6:7::", true],
  ["::2:3:4:5:6:7:8", true],
  ["1:2:3:4:5:6:7:8:9", false],
  ["1:2:3:4:5:6:7", false],
  ["1::2::3", false],
  [":::", false],
  [":1::", false],
  ["1::2:", false],
  ["12345::", false],
  ["g::", false],
  ["ABCD:ef01::", true],
  ["::ffff:1.2.3.4", true],
  ["::1.2.3.4", true],
  ["1:2:3:4:5:6:1.2.3.4", true],
  ["1:2:3:4:5:6:7:1.2.3.4", false],
  ["1:2:3:4:5::1.2.3.4", true],
  ["1:2:3:4:5:6::1.2.3.4", false],
  ["::ffff:1.2.3.256", false],
  ["::ffff:01.2.3.4", false],
  ["1.2.3.4::", false],
  ["1.2.3.4::5", false],
  ["fe80::1%eth0", true],
  ["fe80::1%en0.1-a:b", true],
  ["fe80::1%", false],
  ["fe80::1%eth 0", false],
  ["fe80::1%eth%0", false],
  ["%eth0", false],
  ["", false],
  [" ::1", false],
];

const HEX = "0123456789abcdefABCDEF";
const group = fc.string({ unit: fc.constantFrom(...HEX), minLength: 1, maxLength: 5 });
const octet = fc.oneof(fc.nat(300).map(String), fc.constantFrom("01", "00", "256", ""));
const dotted = fc.tuple(octet, octet, octet, octet).map((o) => o.join("."));
const zone = fc.string({ unit: fc.constantFrom(..."eth0.-:%A "), maxLength: 6 }).map((z) => `%${z}`);
/** Groups joined by ":" with "::" somewhere or nowhere, sometimes a dotted tail or a zone: valid and near-miss alike. */
const shaped = fc
  .tuple(fc.array(group, { maxLength: 9 }), fc.option(fc.nat(9)), fc.option(dotted), fc.option(zone))
  .map(([groups, gap, v4, z]) => {
    const parts = [...groups];
    if (gap !== null) parts.splice(Math.min(gap, parts.length), 0, "");
    let text = parts.join(":");
    if (gap !== null && text.startsWith(":")) text = `:${text}`;
    if (gap !== null && text.endsWith(":")) text = `${text}:`;
    if (v4 !== null) text = `${text}${text === "" || text.endsWith(":") ? "" : ":"}${v4}`;
    return text + (z ?? "");
  });
const noise = fc.string({ unit: fc.constantFrom(..."0123456789abfAF:.%g- "), maxLength: 45 });

describe("JSON Schema formats ipv4 and ipv6 without node:net", () => {
  it.each(TABLE)("isIPv6(%j) is %s, as node:net says", (text, valid) => {
    expect(nodeIsIPv6(text)).toBe(valid);
    expect(isIPv6(text)).toBe(valid);
  });

  it("agrees with node:net's isIPv6 on generated addresses, near-misses and noise", () => {
    fc.assert(fc.property(fc.oneof(fc.ipV6(), fc.tuple(fc.ipV6(), zone).map(([a, z]) => a + z), shaped, noise), (text) => {
      expect(isIPv6(text)).toBe(nodeIsIPv6(text));
    }), { numRuns: 20_000 });
  });

  it("agrees with node:net's isIPv4", () => {
    fc.assert(fc.property(fc.oneof(fc.ipV4(), dotted, noise), (text) => {
      expect(isIPv4(text)).toBe(nodeIsIPv4(text));
    }), { numRuns: 5_000 });
  });
});
