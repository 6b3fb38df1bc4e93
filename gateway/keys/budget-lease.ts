// A per-minute limit shared by every replica on one PostgreSQL (docs/operator-guide.md "Rate limits across
// replicas"): the gateway admits from a small slice leased from the shared bucket, one round trip per slice.
import type { BudgetFactory } from "./rate-limits.ts";
import { TokenBucket } from "./token-bucket.ts";

/** What the shared bucket answered a lease: units granted, its level after, and how many gateways lease from it. */
export interface LeaseGrant {
  granted: number;
  /** The shared bucket's level after the grant (below zero while receipts' debts are larger than its refill). */
  level: number;
  gateways: number;
}

/** The shared counter: settles `owe` (a debt; negative gives units back), then grants up to `want` whole units. */
export interface LeaseSource {
  lease(scope: string, kind: "rpm" | "tpm", capacity: number, owe: number, want: number): Promise<LeaseGrant>;
}

export const MINUTE_MS = 60_000;
/** How long a gateway counts for itself after the database failed it, before it asks again. */
export const FALLBACK_RETRY_MS = 5_000;

/** A twentieth of the limit, at least 1: two replicas strand at most about a tenth of it between them. */
export function sliceOf(capacity: number): number {
  return Math.max(1, Math.ceil(capacity / 20));
}

/** Each gateway's own share while the database is away: the limit divided by the gateways last seen leasing. */
export function fallbackShare(capacity: number, gateways: number): number {
  return Math.max(1, Math.floor(capacity / Math.max(1, gateways)));
}

/** Milliseconds until a bucket of `capacity` per minute at `level` holds one whole unit again. */
export function msUntilUnit(capacity: number, level: number): number {
  return level >= 1 ? 0 : Math.ceil(((1 - level) * MINUTE_MS) / capacity);
}

/**
 * The same face as TokenBucket for rate-limits.ts, over a leased slice. `held` is what this gateway may still
 * admit; below zero it is a receipt's debt, paid with the next lease. Time is passed in, never read.
 */
export class LeasedBucket {
  private held = 0;
  private leasedAt = -Infinity;
  /** The shared bucket's level at the last lease: the x-ratelimit-remaining estimate beside what is held. */
  private shared: number;
  private gateways = 1;
  /** The shared bucket said empty: refuse here, with no round trip, until it holds a unit again. */
  private emptyUntil = -Infinity;
  private pending: Promise<void> | undefined;
  /** Units promised to admissions about to take them, and requests waiting for a lease. */
  private promised = 0;
  private waiting = 0;
  /** Set while the database is away: this gateway's own share, counted locally. */
  private fallback: { bucket: TokenBucket; retryAt: number } | undefined;

  constructor(
    private readonly source: LeaseSource,
    private readonly scope: string,
    private readonly kind: "rpm" | "tpm",
    private capacity: number,
    private readonly onFallback: (err: unknown) => void = () => undefined,
  ) {
    this.shared = capacity;
  }

  get limit(): number {
    return this.capacity;
  }

  /** Resolves once this gateway holds a unit, knows the shared bucket is empty, or has fallen back; undefined when it already does. */
  ready(now: number): Promise<void> | undefined {
    if (this.fallback !== undefined) {
      if (now >= this.fallback.retryAt) void this.refill(now);
      return undefined;
    }
    this.expire(now);
    if (now < this.emptyUntil) return undefined;
    if (this.hasUnit()) {
      this.promise();
      return undefined;
    }
    return this.waitForUnit(now);
  }

  available(now: number): number {
    if (this.fallback !== undefined) return this.fallback.bucket.available(now);
    this.expire(now);
    return this.held;
  }

  /** The header's estimate: what is held here plus what the shared bucket had at the last lease. */
  remaining(now: number): number {
    if (this.fallback !== undefined) return this.fallback.bucket.available(now);
    return Math.max(0, this.available(now)) + Math.max(0, Math.floor(this.shared));
  }

  take(n: number, now: number): void {
    if (this.fallback !== undefined) {
      this.fallback.bucket.take(n, now);
      return;
    }
    this.held -= n;
    if (this.kind === "rpm") this.promised = Math.max(0, this.promised - 1);
    // the next slice is asked for while half of this one is left, so the request path rarely waits for it
    if (this.held < sliceOf(this.capacity) / 2 && now >= this.emptyUntil) void this.refill(now);
  }

  msUntil(level: number, now: number): number {
    if (this.fallback !== undefined) return this.fallback.bucket.msUntil(level, now);
    if (this.available(now) >= level) return 0;
    return Math.max(this.emptyUntil - now, msUntilUnit(this.capacity, this.held));
  }

  /** Until this gateway's lease has lapsed: then the state may be forgotten and nothing is held. */
  msUntilFull(now: number): number {
    if (this.fallback !== undefined) return this.fallback.bucket.msUntilFull(now);
    return Math.max(0, this.leasedAt + MINUTE_MS - now);
  }

  resize(capacity: number, now: number): void {
    this.capacity = capacity;
    this.fallback?.bucket.resize(fallbackShare(capacity, this.gateways), now);
  }

  /**
   * Requests waiting together each need a unit of their own: each is promised one before its admission takes it
   * (ready and take run in one turn of the event loop), and those beyond what is held lease again, all waiting
   * asked for at once. Tokens per minute only need one token held, taken from receipts later.
   */
  private hasUnit(): boolean {
    return this.kind === "tpm" ? this.held >= 1 : this.held - this.promised >= 1;
  }

  private promise(): void {
    if (this.kind === "rpm") this.promised += 1;
  }

  private async waitForUnit(now: number): Promise<void> {
    this.waiting += 1;
    try {
      for (;;) {
        await this.refill(now);
        if (this.fallback !== undefined || now < this.emptyUntil) return;
        if (this.hasUnit()) {
          this.promise();
          return;
        }
      }
    } finally {
      this.waiting -= 1;
    }
  }

  /** A slice leased more than a minute ago is dropped: the shared bucket has refilled since, so using it would add to the limit. */
  private expire(now: number): void {
    if (now - this.leasedAt > MINUTE_MS && this.held > 0) this.held = 0;
  }

  /** One lease in flight at a time; concurrent callers share it. */
  private refill(now: number): Promise<void> {
    this.pending ??= this.lease(now).finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async lease(now: number): Promise<void> {
    const owe = Math.max(0, -this.held);
    try {
      const grant = await this.source.lease(this.scope, this.kind, this.capacity, owe, Math.max(sliceOf(this.capacity), this.waiting));
      this.fallback = undefined;
      // an answer arrives in a turn of its own: every promise made before it was taken, or its admission refused
      this.promised = 0;
      this.held += owe + grant.granted;
      this.leasedAt = now;
      this.shared = grant.level;
      this.gateways = grant.gateways;
      this.emptyUntil = grant.granted === 0 ? now + msUntilUnit(this.capacity, grant.level) : -Infinity;
    } catch (err) {
      if (this.fallback === undefined) {
        this.onFallback(err);
        this.fallback = { bucket: new TokenBucket(fallbackShare(this.capacity, this.gateways), MINUTE_MS, now), retryAt: 0 };
      }
      this.fallback.retryAt = now + FALLBACK_RETRY_MS;
    }
  }
}

/**
 * The rate limits' budget factory over a shared source: every per-minute limit leased from it. `onFallback` hears
 * the database fail a lease, at most once per FALLBACK_RETRY_MS however many budgets fall back together.
 */
export function leasedBudgets(source: LeaseSource, onFallback: (err: unknown) => void): BudgetFactory {
  let heardAt = -Infinity;
  const heard = (err: unknown) => {
    const now = Date.now();
    if (now - heardAt < FALLBACK_RETRY_MS) return;
    heardAt = now;
    onFallback(err);
  };
  return (scope, kind, limit) => new LeasedBucket(source, scope, kind, limit, heard);
}
