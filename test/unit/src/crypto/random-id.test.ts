// Request and session ids (src/crypto/random-id.ts): random bytes drawn from a pool the CSPRNG fills ahead, each
// handed out once, across refills too.
import { describe, expect, it } from "vitest";
import { randomBase64url, randomHex } from "../../../../src/crypto/random-id.ts";

describe("Random ids: the pool hands out each random byte once", () => {
  it("gives ids of the asked length in their alphabet", () => {
    expect(randomHex(12)).toMatch(/^[0-9a-f]{24}$/);
    expect(randomBase64url(12)).toMatch(/^[A-Za-z0-9_-]{16}$/);
  });

  it("repeats no id over several refills of its 4 KiB pool", () => {
    // 3,000 ids of 12 bytes span nine refills; a pool handed out twice, or not refilled, repeats ids
    const ids = Array.from({ length: 3_000 }, () => randomHex(12));
    expect(new Set(ids).size).toBe(ids.length);
    // a refill of zeroes (bytes handed out, then wiped, never refilled) would show as a run of zero ids
    expect(ids.filter((id) => /^0+$/.test(id))).toEqual([]);
  });
});
