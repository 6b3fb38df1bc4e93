// The time a judge could hear in (docs/architecture.md "Faults"): the clock every liveness judgement times silence on
// (the coordinator's sweep, the NATS feeds and gateways) stands still over a stall of the judging process itself, and
// runs on through a timer that is merely late.
import { describe, expect, it, vi } from "vitest";
import { AwakeClock, stallOf } from "../../../../src/link/awake-clock.ts";
import { stallFor, useFakeClock } from "../../../fixtures/heartbeat-fakes.ts";

useFakeClock();

describe("Faults: silence is timed only over what the judge could hear", () => {
  it("a tick later than its slack is a stall of this process: the clock does not count it", () => {
    const clock = new AwakeClock();
    const start = clock.now();
    const due = performance.now() + 1_000;
    stallFor(61_000); // frozen for a minute past its tick
    clock.woke(due, 500);
    expect(clock.now() - start).toBe(1_000);
  });

  it("a tick merely late by a little counts as it is, so a vanished peer is not kept longer under load", () => {
    const clock = new AwakeClock();
    const start = clock.now();
    const due = performance.now() + 1_000;
    stallFor(1_400);
    clock.woke(due, 500);
    expect(clock.now() - start).toBe(1_400);
    expect(stallOf(due, 500)).toBe(0);
  });

  it("time after a stall counts again", () => {
    const clock = new AwakeClock();
    const start = clock.now();
    const due = performance.now();
    stallFor(10_000);
    clock.woke(due, 500);
    expect(clock.now() - start).toBe(0);
    vi.advanceTimersByTime(2_000);
    expect(clock.now() - start).toBe(2_000);
  });
});
