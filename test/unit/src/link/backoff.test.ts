// Reconnects with jittered backoff (issue: agents reconnect "with jittered backoff when the link drops").
import { describe, expect, it } from "vitest";
import { Backoff } from "../../../../src/link/backoff.ts";

describe("Agent reconnects: jittered exponential backoff", () => {
  it("waits between half and all of a cap that doubles up to the maximum, and starts over after a reset", () => {
    const low = new Backoff(250, 5_000, () => 0);
    const high = new Backoff(250, 5_000, () => 1);
    expect([1, 2, 3, 4, 5, 6, 7].map(() => low.next())).toEqual([125, 250, 500, 1000, 2000, 2500, 2500]);
    expect([1, 2, 3, 4, 5, 6, 7].map(() => high.next())).toEqual([250, 500, 1000, 2000, 4000, 5000, 5000]);
    low.reset();
    expect(low.next()).toBe(125);
  });
});
