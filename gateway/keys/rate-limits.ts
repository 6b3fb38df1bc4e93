// Rate limits per key and per user (docs/operator-guide.md "Rate limits"): requests in flight, requests per minute and
// tokens per minute, each from an override or the operator's default. It decides and counts; the caller answers 429.
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

const MINUTE_MS = 60_000;
/** Nothing says when a request in flight will end; a second is the shortest wait worth suggesting. */
const CONCURRENCY_RETRY_MS = 1_000;
/** Idle keys are forgotten every so many decisions, so the map holds only keys in recent use. */
const SWEEP_EVERY = 1_000;

interface KeyState {
  inFlight: number;
  requests?: TokenBucket;
  tokens?: TokenBucket;
}

export class RateLimits {
  private readonly keys = new Map<string, KeyState>();
  private decisions = 0;

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
      const full = (b?: TokenBucket) => b === undefined || b.msUntilFull(now) === 0;
      if (s.inFlight === 0 && full(s.requests) && full(s.tokens)) this.keys.delete(key);
    }
  }

  private stateOf(key: string, limits: Limits, now: number): KeyState {
    let state = this.keys.get(key);
    if (state === undefined) {
      state = { inFlight: 0 };
      this.keys.set(key, state);
    }
    state.requests = fit(state.requests, limits.rpm, now);
    state.tokens = fit(state.tokens, limits.tpm, now);
    return state;
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

/** The bucket for a per-minute limit as configured now: made, resized, or dropped when unlimited. */
function fit(bucket: TokenBucket | undefined, limit: number | undefined, now: number): TokenBucket | undefined {
  if (limit === undefined) return undefined;
  if (bucket === undefined) return new TokenBucket(limit, MINUTE_MS, now);
  bucket.resize(limit, now);
  return bucket;
}

/** Each per-minute quota from the scope with the fewest left: what a caller can really still send. */
function scarcest(states: readonly { state: KeyState }[], now: number): LimitState {
  const quota = (b: TokenBucket): Quota => ({ limit: b.limit, remaining: Math.max(0, Math.floor(b.available(now))), resetMs: b.msUntilFull(now) });
  const pick = (buckets: (TokenBucket | undefined)[]): Quota | undefined =>
    buckets
      .filter((b): b is TokenBucket => b !== undefined)
      .map(quota)
      .reduce<Quota | undefined>((least, q) => (least === undefined || q.remaining < least.remaining ? q : least), undefined);
  const requests = pick(states.map(({ state }) => state.requests));
  const tokens = pick(states.map(({ state }) => state.tokens));
  return { ...(requests && { requests }), ...(tokens && { tokens }) };
}
