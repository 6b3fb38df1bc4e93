// Rate limits per key and per user (docs/operator-guide.md "Rate limits"): requests in flight, requests per minute and
// tokens per minute, each from an override or the operator's default. It decides and counts; the caller answers 429.
// Each per-minute limit is a MinuteBudget: this gateway's own token bucket by default, or, on a shared PostgreSQL,
// a slice leased from every replica's shared bucket (budget-lease.ts), made by the `budgets` factory.
import { TokenBucket } from "./token-bucket.ts";

/** A key's effective limits; an absent one is unlimited. */
export interface Limits {
  concurrency?: number;
  rpm?: number;
  tpm?: number;
}

export type LimitName = keyof Limits;

/** One configured per-minute limit as OpenAI's `x-ratelimit-*` headers report it. */
export interface Quota {
  limit: number;
  remaining: number;
  /** Until the bucket is full again. */
  resetMs: number;
}

export interface LimitState {
  requests?: Quota;
  tokens?: Quota;
}

export interface Ticket {
  /** Frees the request's concurrency slot; later calls do nothing, so every ending path may call it. */
  release(): void;
  /** Charges a finished answer's tokens (its verified receipt's total) to the tokens-per-minute bucket. */
  debit(tokens: number, now: number): void;
}

export type Decision =
  | { admitted: true; state: LimitState; ticket: Ticket }
  | { admitted: false; limit: LimitName; value: number; retryAfterMs: number; state: LimitState; scope: string };

/** One set of counters a request is charged to: its key's, and its user's across all their keys. */
export interface Scope {
  key: string;
  limits: Limits;
}

/** A per-minute limit's counter: TokenBucket's face, `remaining` for the headers, `ready` when it may need a round trip first. */
export interface MinuteBudget {
  readonly limit: number;
  available(now: number): number;
  remaining(now: number): number;
  take(n: number, now: number): void;
  msUntil(level: number, now: number): number;
  msUntilFull(now: number): number;
  resize(limit: number, now: number): void;
  ready?(now: number): Promise<void> | undefined;
}

/** Makes the counter of one scope's per-minute limit. */
export type BudgetFactory = (scope: string, kind: "rpm" | "tpm", limit: number, now: number) => MinuteBudget;

const MINUTE_MS = 60_000;
const localBudget: BudgetFactory = (_scope, _kind, limit, now) => new TokenBucket(limit, MINUTE_MS, now);
/** Nothing says when a request in flight will end; a second is the shortest wait worth suggesting. */
const CONCURRENCY_RETRY_MS = 1_000;
/** Idle keys are forgotten every so many decisions, so the map holds only keys in recent use. */
const SWEEP_EVERY = 1_000;

interface KeyState {
  inFlight: number;
  requests?: MinuteBudget;
  tokens?: MinuteBudget;
}

export class RateLimits {
  private readonly keys = new Map<string, KeyState>();
  private decisions = 0;

  constructor(private readonly budgets: BudgetFactory = localBudget) {}

  /**
   * What must happen before `admitAll` can decide from memory: a shared budget with no slice in hand leases one
   * (one round trip, shared by concurrent requests). Undefined when nothing needs waiting for, as always with
   * this gateway's own buckets.
   */
  prepare(scopes: readonly Scope[], now: number): Promise<unknown> | undefined {
    const waits = scopes.flatMap(({ key, limits }) => {
      const state = this.stateOf(key, limits, now);
      return [state.requests?.ready?.(now), state.tokens?.ready?.(now)].filter((w) => w !== undefined);
    });
    return waits.length === 0 ? undefined : Promise.all(waits);
  }

  /**
   * Admits a request for `key` under `limits`, or says which limit refuses it and when a retry can pass.
   * Tokens: a request's size is unknown until its receipt, so it is admitted while the key has at least
   * one token left, and the receipt's total is debited afterwards, which may take the bucket below zero.
   */
  admit(key: string, limits: Limits, now: number): Decision {
    return this.admitAll([{ key, limits }], now);
  }

  /**
   * Admits a request charged to every scope at once (a key and its user), or refuses it naming the scope and
   * limit that would be passed. The headers report the scarcer of the scopes' quotas.
   */
  admitAll(scopes: readonly Scope[], now: number): Decision {
    if (++this.decisions % SWEEP_EVERY === 0) this.sweep(now);
    const states = scopes.map(({ key, limits }) => ({ key, limits, state: this.stateOf(key, limits, now) }));
    // every limit of every scope is checked before anything is taken: a refused request costs no one anything
    for (const { key, limits, state } of states) {
      if (limits.concurrency !== undefined && state.inFlight >= limits.concurrency) {
        return this.refuse(key, "concurrency", limits.concurrency, CONCURRENCY_RETRY_MS, states, now);
      }
      for (const [limit, bucket] of [["rpm", state.requests], ["tpm", state.tokens]] as const) {
        if (bucket !== undefined && bucket.available(now) < 1) return this.refuse(key, limit, bucket.limit, bucket.msUntil(1, now), states, now);
      }
    }
    for (const { state } of states) {
      state.inFlight += 1;
      state.requests?.take(1, now);
    }
    const tickets = states.map(({ key, state }) => this.ticket(key, state));
    return {
      admitted: true,
      state: scarcest(states, now),
      ticket: { release: () => tickets.forEach((t) => t.release()), debit: (tokens, at) => tickets.forEach((t) => t.debit(tokens, at)) },
    };
  }

  /** How many keys are remembered now (idle ones are swept). */
  get size(): number {
    return this.keys.size;
  }

  /** Forgets keys with nothing in flight and full buckets: remembering them would change no decision. */
  sweep(now: number): void {
    for (const [key, s] of this.keys) {
      const full = (b?: MinuteBudget) => b === undefined || b.msUntilFull(now) === 0;
      if (s.inFlight === 0 && full(s.requests) && full(s.tokens)) this.keys.delete(key);
    }
  }

  private stateOf(key: string, limits: Limits, now: number): KeyState {
    let state = this.keys.get(key);
    if (state === undefined) {
      state = { inFlight: 0 };
      this.keys.set(key, state);
    }
    state.requests = this.fit(key, "rpm", state.requests, limits.rpm, now);
    state.tokens = this.fit(key, "tpm", state.tokens, limits.tpm, now);
    return state;
  }

  /** The counter for a per-minute limit as configured now: made, resized, or dropped when unlimited. */
  private fit(key: string, kind: "rpm" | "tpm", bucket: MinuteBudget | undefined, limit: number | undefined, now: number): MinuteBudget | undefined {
    if (limit === undefined) return undefined;
    if (bucket === undefined) return this.budgets(key, kind, limit, now);
    bucket.resize(limit, now);
    return bucket;
  }

  private refuse(scope: string, limit: LimitName, value: number, retryAfterMs: number, states: readonly { state: KeyState }[], now: number): Decision {
    return { admitted: false, scope, limit, value, retryAfterMs, state: scarcest(states, now) };
  }

  private ticket(key: string, state: KeyState): Ticket {
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        state.inFlight -= 1;
      },
      debit: (tokens, now) => {
        state.tokens?.take(tokens, now);
        // a debit that lands after a sweep must still count against the key's next request
        if (!this.keys.has(key)) this.keys.set(key, state);
      },
    };
  }
}


/** Each per-minute quota from the scope with the fewest left: what a caller can really still send. */
function scarcest(states: readonly { state: KeyState }[], now: number): LimitState {
  const quota = (b: MinuteBudget): Quota => ({ limit: b.limit, remaining: Math.max(0, Math.floor(b.remaining(now))), resetMs: b.msUntilFull(now) });
  const pick = (buckets: (MinuteBudget | undefined)[]): Quota | undefined =>
    buckets
      .filter((b): b is MinuteBudget => b !== undefined)
      .map(quota)
      .reduce<Quota | undefined>((least, q) => (least === undefined || q.remaining < least.remaining ? q : least), undefined);
  const requests = pick(states.map(({ state }) => state.requests));
  const tokens = pick(states.map(({ state }) => state.tokens));
  return { ...(requests && { requests }), ...(tokens && { tokens }) };
}
