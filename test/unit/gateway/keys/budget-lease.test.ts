// docs/operator-guide.md "Rate limits across replicas" at the unit level: the lease arithmetic of per-minute limits
// shared by gateways, with the shared bucket played by an in-memory source on a clock passed in (no database).
import { describe, expect, it } from "vitest";
import {
  FALLBACK_RETRY_MS, fallbackShare, leasedBudgets, LeasedBucket, MINUTE_MS, msUntilUnit, sliceOf,
  type LeaseGrant, type LeaseSource,
} from "../../../../gateway/keys/budget-lease.ts";
import { RateLimits, type Decision } from "../../../../gateway/keys/rate-limits.ts";

const T0 = 1_700_000_000_000;

/** svc_lease's arithmetic over one process's memory: a token bucket per (scope, kind), refilled on `clock.now`. */
class MemorySource implements LeaseSource {
  readonly clock = { now: T0 };
  readonly buckets = new Map<string, { level: number; at: number }>();
  calls = 0;
  down = false;
  gateways = 1;

  async lease(scope: string, kind: string, capacity: number, owe: number, want: number): Promise<LeaseGrant> {
    this.calls += 1;
    if (this.down) throw new Error("connect ECONNREFUSED");
    const now = this.clock.now;
    const b = this.buckets.get(`${scope}/${kind}`) ?? { level: capacity, at: now };
    const cur = Math.min(capacity, Math.min(capacity, b.level + (Math.max(0, now - b.at) * capacity) / MINUTE_MS) - owe);
    const granted = Math.max(0, Math.min(want, Math.floor(cur)));
    this.buckets.set(`${scope}/${kind}`, { level: cur - granted, at: Math.max(b.at, now) });
    return { granted, level: cur - granted, gateways: this.gateways };
  }
}

/** One gateway's limiter over the shared source: awaits what `prepare` needs, then decides. */
async function admit(limits: RateLimits, rpm: number, now: number, key = "key_1"): Promise<Decision> {
  const scopes = [{ key, limits: { rpm } }];
  await limits.prepare(scopes, now);
  return limits.admitAll(scopes, now);
}

describe("Rate limits across replicas: the slice", () => {
  it("is a twentieth of the limit, at least 1; the fallback share divides the limit by the gateways last seen", () => {
    expect([sliceOf(60), sliceOf(1), sliceOf(1_000), sliceOf(30)]).toEqual([3, 1, 50, 2]);
    expect([fallbackShare(60, 2), fallbackShare(60, 0), fallbackShare(1, 3), fallbackShare(100, 3)]).toEqual([30, 60, 1, 33]);
    expect([msUntilUnit(60, 1), msUntilUnit(60, 0), msUntilUnit(60, -2)]).toEqual([0, 1_000, 3_000]);
  });
});

describe("Rate limits across replicas: two gateways on one shared budget", () => {
  it("120 requests alternating over two gateways within the minute: exactly 60 admitted, one round trip per slice", async () => {
    const source = new MemorySource();
    const [a, b] = [new RateLimits(leasedBudgets(source, () => undefined)), new RateLimits(leasedBudgets(source, () => undefined))];
    const outcomes: boolean[] = [];
    for (let i = 0; i < 120; i++) outcomes.push((await admit(i % 2 === 0 ? a : b, 60, T0)).admitted);
    expect(outcomes.filter(Boolean)).toHaveLength(60);
    expect(outcomes.slice(0, 60).every(Boolean)).toBe(true);
    // 20 slices of 3, plus each gateway's one look that found the budget empty: refusals after it cost no round trip
    expect(source.calls).toBeLessThanOrEqual(60 / 3 + 2);
  });

  it("requests arriving together at a gateway with no slice each get a unit: those beyond the slice lease again, all at once", async () => {
    const source = new MemorySource();
    const a = new RateLimits(leasedBudgets(source, () => undefined));
    const together = await Promise.all(Array.from({ length: 10 }, () => admit(a, 60, T0)));
    expect(together.filter((d) => d.admitted)).toHaveLength(10);
    // the first slice (3), then one lease for the other 7 waiting; the last take's prefetch may add one more
    expect(source.calls).toBeLessThanOrEqual(3);
    const rest = await Promise.all(Array.from({ length: 60 }, () => admit(a, 60, T0)));
    expect(rest.filter((d) => d.admitted)).toHaveLength(50);
  });

  it("a refused request says when the shared budget holds a unit again, and the next slice is leased then", async () => {
    const source = new MemorySource();
    const a = new RateLimits(leasedBudgets(source, () => undefined));
    for (let i = 0; i < 60; i++) expect((await admit(a, 60, T0)).admitted).toBe(true);
    const refused = await admit(a, 60, T0);
    expect(refused).toMatchObject({ admitted: false, limit: "rpm", value: 60, retryAfterMs: 1_000 });
    const calls = source.calls;
    expect((await admit(a, 60, T0 + 500)).admitted).toBe(false);
    expect(source.calls).toBe(calls);
    source.clock.now = T0 + 1_000;
    expect((await admit(a, 60, T0 + 1_000)).admitted).toBe(true);
    // the unit refilled meanwhile, and the next slice asked for in the background, which finds the budget empty
    expect(source.calls).toBe(calls + 2);
  });

  it("a slice unused for a minute lapses: a gateway never adds an old slice to a refilled budget", () => {
    const source = new MemorySource();
    const bucket = new LeasedBucket(source, "key_1", "rpm", 60);
    return (async () => {
      await bucket.ready(T0);
      expect(bucket.available(T0)).toBe(3);
      expect(bucket.available(T0 + MINUTE_MS + 1)).toBe(0);
      expect(bucket.msUntilFull(T0 + MINUTE_MS + 1)).toBe(0);
    })();
  });

  it("tokens per minute: a receipt larger than the slice is a debt paid to the shared budget with the next lease", async () => {
    const source = new MemorySource();
    const bucket = new LeasedBucket(source, "key_1", "tpm", 100);
    await bucket.ready(T0);
    expect(bucket.available(T0)).toBe(5);
    bucket.take(250, T0); // the receipt: 245 more than held; the background lease settles it
    await bucket.ready(T0);
    expect(source.buckets.get("key_1/tpm")!.level).toBe(100 - 5 - 245);
    expect(bucket.available(T0)).toBe(0);
    // 150 tokens short: the shared budget holds a whole token again after 151/100 of a minute
    expect(bucket.msUntil(1, T0)).toBe(Math.ceil((151 * MINUTE_MS) / 100));
  });
});

describe("Rate limits across replicas: while the database is away", () => {
  it("each gateway counts its own share (the limit over the gateways last seen), asks again later, and goes back to leasing", async () => {
    const source = new MemorySource();
    source.gateways = 2;
    const heard: unknown[] = [];
    const a = new RateLimits(leasedBudgets(source, (err) => heard.push(err)));
    expect((await admit(a, 60, T0)).admitted).toBe(true); // a slice of 3 leased: two gateways seen, 2 units held
    source.down = true;
    let admitted = 0;
    for (let i = 0; i < 60; i++) if ((await admit(a, 60, T0)).admitted) admitted += 1;
    // one from its slice, whose take asked for the next slice and heard the database fail; from then on its own
    // share, 60 over the 2 gateways, in place of what was left of the slice
    expect(admitted).toBe(1 + 30);
    expect(heard).toHaveLength(1);
    const calls = source.calls;
    await admit(a, 60, T0 + 1_000);
    expect(source.calls).toBe(calls); // no round trip per request while away
    source.down = false;
    source.clock.now = T0 + FALLBACK_RETRY_MS;
    await admit(a, 60, T0 + FALLBACK_RETRY_MS); // counted locally; its look at the database brings the lease back
    expect(source.calls).toBe(calls + 1);
    expect((await admit(a, 60, T0 + FALLBACK_RETRY_MS)).admitted).toBe(true);
    expect(source.calls).toBeGreaterThan(calls);
  });
});
