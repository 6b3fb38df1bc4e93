// Reconnects with jittered backoff (issue: agents reconnect "with jittered backoff when the link drops").
import { describe, expect, it } from "vitest";
import { Backoff } from "../../../../src/link/backoff.ts";

describe("Agent reconnects: jittered exponential backoff", () => {
  it("waits anywhere from nothing to a cap that doubles up to the maximum (full jitter), and starts over after a reset", () => {
    const low = new Backoff(250, 5_000, () => 0);
    const mid = new Backoff(250, 5_000, () => 0.5);
    const high = new Backoff(250, 5_000, () => 1);
    expect([1, 2, 3, 4, 5, 6, 7].map(() => low.next())).toEqual([0, 0, 0, 0, 0, 0, 0]);
    expect([1, 2, 3, 4, 5, 6, 7].map(() => mid.next())).toEqual([125, 250, 500, 1000, 2000, 2500, 2500]);
    expect([1, 2, 3, 4, 5, 6, 7].map(() => high.next())).toEqual([250, 500, 1000, 2000, 4000, 5000, 5000]);
    high.reset();
    expect(high.next()).toBe(250);
  });
});
