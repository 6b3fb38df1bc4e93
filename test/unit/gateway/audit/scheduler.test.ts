// Design §4 "Pacing and pinning", the auditor's schedule on a fake clock and seeded dice: Bernoulli 1/rate after
// ordinary placements (never every rate-th), a floor of one audit per U(floor/2, floor) taken only at an ordinary
// placement, and an exponential delay before each audit is sent.
import { describe, expect, it } from "vitest";
import { AuditScheduler } from "../../../../gateway/audit/scheduler.ts";
import { fakeDice } from "../../../fixtures/fake-dice.ts";

const HOUR = 3_600_000;

describe("§4 Pacing: the rate", () => {
  it("about one placement in rate is audited, at random: the gaps between audits vary", () => {
    const dice = fakeDice(7);
    const scheduler = new AuditScheduler({ rate: 200, floorMs: 10 ** 15, delayMeanMs: 20_000 }, dice);
    const audited: number[] = [];
    for (let i = 0; i < 200_000; i++) if (scheduler.placed("p") !== undefined) audited.push(i);
    // 1,000 expected; a binomial's sd is ~31.6
    expect(audited.length).toBeGreaterThan(1_000 - 5 * 32);
    expect(audited.length).toBeLessThan(1_000 + 5 * 32);
    const gaps = new Set(audited.slice(1).map((at, i) => at - audited[i]!));
    expect(gaps.size).toBeGreaterThan(100);
  });

  it("each provider is drawn for on its own placements", () => {
    const dice = fakeDice(3);
    const scheduler = new AuditScheduler({ rate: 10, floorMs: 10 ** 15, delayMeanMs: 1 }, dice);
    const counts = { a: 0, b: 0 };
    for (let i = 0; i < 20_000; i++) if (scheduler.placed("a") !== undefined) counts.a++;
    expect(counts.b).toBe(0);
    expect(counts.a).toBeGreaterThan(1_700);
    expect(counts.a).toBeLessThan(2_300);
  });
});

describe("§4 Pacing: the floor", () => {
  it("a provider with ordinary sessions every minute is audited at least once per floor, each U(floor/2, floor) after the last", () => {
    const dice = fakeDice(11);
    const scheduler = new AuditScheduler({ rate: 10 ** 12, floorMs: HOUR, delayMeanMs: 20_000 }, dice);
    const at: number[] = [];
    for (dice.t = 0; dice.t < 100 * HOUR; dice.t += 60_000) if (scheduler.placed("p") !== undefined) at.push(dice.t);
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    expect(at[0]).toBeLessThanOrEqual(HOUR + 60_000);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(HOUR / 2);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(HOUR + 60_000);
    // not on a clock: the gaps spread over the half hour
    expect(Math.max(...gaps) - Math.min(...gaps)).toBeGreaterThan(HOUR / 4);
  });

  it("a due audit waits for the provider's next ordinary session: a provider fed nothing is never audited", () => {
    const dice = fakeDice(5);
    const scheduler = new AuditScheduler({ rate: 10 ** 12, floorMs: HOUR, delayMeanMs: 20_000 }, dice);
    expect(scheduler.placed("p")).toBeUndefined();
    dice.t = 30 * HOUR;
    // long overdue, audited at once on its next session, then not again until the floor
    expect(scheduler.placed("p")).toBeGreaterThan(0);
    expect(scheduler.placed("p")).toBeUndefined();
  });
});

describe("§4 Pacing: the delay", () => {
  it("is exponential with the given mean", () => {
    const dice = fakeDice(9);
    const scheduler = new AuditScheduler({ rate: 1, floorMs: HOUR, delayMeanMs: 20_000 }, dice);
    const delays = Array.from({ length: 20_000 }, () => scheduler.placed("p")!);
    const mean = delays.reduce((s, d) => s + d, 0) / delays.length;
    expect(mean).toBeGreaterThan(19_000);
    expect(mean).toBeLessThan(21_000);
    // an exponential's median is ln 2 of its mean
    const median = [...delays].sort((x, y) => x - y)[delays.length / 2]!;
    expect(median / 20_000).toBeCloseTo(Math.LN2, 1);
  });
});
