// The rate limits on a request's way in: failed authentication slowed per client address, then the key's limits
// and its user's (across all of the user's keys) checked before its route runs, with OpenAI's x-ratelimit-*
// headers and 429 rate_limited when over.
import type { IncomingMessage, ServerResponse } from "node:http";
import { ApiError } from "../../src/errors.ts";
import type { Principal } from "./auth.ts";
import { AuthFailures, clientAddress } from "./auth-failures.ts";
import type { KeyLimits } from "./key-store.ts";
import { rateLimitHeaders } from "./rate-limit-headers.ts";
import { RateLimits, type BudgetFactory, type LimitName, type Limits, type Scope } from "./rate-limits.ts";

export const DEFAULT_AUTH_FAILURES_PER_MINUTE = 20;

export interface LimitSettings {
  /** The operator's per-key defaults (`serve --key-*`); absent ones are unlimited. */
  keyDefaults: Limits;
  /** The operator's per-user defaults (`serve --user-*`), over all of a user's keys; absent ones are unlimited. */
  userDefaults: Limits;
  authFailuresPerMinute: number;
  /** Take the client address from X-Forwarded-For's last entry: only behind one proxy that appends it. */
  trustProxy: boolean;
}

/** `svc-gateway serve` with none of the limit flags: keys unlimited, failed authentication slowed. */
export const DEFAULT_LIMIT_SETTINGS: LimitSettings = {
  keyDefaults: {},
  userDefaults: {},
  authFailuresPerMinute: DEFAULT_AUTH_FAILURES_PER_MINUTE,
  trustProxy: false,
};

export interface LimiterHooks {
  /** A user key's overrides from the key store; operator keys have none. */
  overrides(principal: Principal): KeyLimits | undefined;
  /** A user's overrides of the per-user defaults, from the key store. */
  userOverrides(userId: number): KeyLimits | undefined;
  /** Counts a 429 by the limit that gave it (for /metrics); a user's limits are `user_`-prefixed. */
  limited(limit: LimitName | `user_${LimitName}` | "auth"): void;
}

/** What the route holds while it runs: the key's token bucket, charged when the receipt arrives. */
export interface Admission {
  debit(tokens: number): void;
}

const WHY: Record<LimitName, (value: number) => string> = {
  concurrency: (n) => `This API key already has ${n} request(s) in flight, its limit; retry when one has finished.`,
  rpm: (n) => `This API key is over its limit of ${n} requests per minute; retry after the Retry-After seconds.`,
  tpm: (n) => `This API key is over its limit of ${n} tokens per minute; retry after the Retry-After seconds.`,
};

const WHY_USER: Record<LimitName, (value: number) => string> = {
  concurrency: (n) => `This key's user already has ${n} request(s) in flight over all their API keys, the user's limit; retry when one has finished.`,
  rpm: (n) => `This key's user is over their limit of ${n} requests per minute over all their API keys; retry after the Retry-After seconds.`,
  tpm: (n) => `This key's user is over their limit of ${n} tokens per minute over all their API keys; retry after the Retry-After seconds.`,
};

/** The scope name a user's counters go by; key ids (`key_…`, `op_…`) never look like it. */
const userScope = (userId: number) => `user:${userId}`;

export class Limiter {
  private readonly keys: RateLimits;
  private readonly failures: AuthFailures;

  /** `budgets`: the per-minute counters shared by replicas (a PostgreSQL store's leases); absent, each gateway counts for itself. */
  constructor(
    private readonly settings: LimitSettings,
    private readonly hooks: LimiterHooks,
    budgets?: BudgetFactory,
  ) {
    this.failures = new AuthFailures(settings.authFailuresPerMinute);
    this.keys = new RateLimits(budgets);
  }

  /**
   * Runs `check` (the bearer-key check). Its 401 counts against the caller's address, and once the address is
   * over its allowance the 401 becomes 429. A key that checks out never touches the count.
   */
  async authenticate(req: IncomingMessage, check: () => Promise<Principal>): Promise<Principal> {
    try {
      return await check();
    } catch (err) {
      if (!(err instanceof ApiError) || err.code !== "invalid_api_key") throw err;
      const waitMs = this.failures.fail(clientAddress(req, this.settings.trustProxy), Date.now());
      if (waitMs === undefined) throw err;
      this.hooks.limited("auth");
      throw new ApiError("rate_limited", "Too many failed authentication attempts from this address; wait, then send a valid API key.", {
        retryAfterS: waitMs / 1000,
      });
    }
  }

  /** Admits the request under its key's and its user's limits or throws 429; its slots are freed whenever the answer ends. */
  /**
   * Undefined when `admit` can decide from memory, as always with this gateway's own counters; else the lease a
   * shared budget with no slice in hand needs first (one round trip per slice, not per request): await it, then admit.
   */
  ready(principal: Principal): Promise<unknown> | undefined {
    return this.keys.prepare(this.scopesOf(principal), Date.now());
  }

  admit(principal: Principal, res: ServerResponse): Admission {
    const scopes = this.scopesOf(principal);
    const decision = this.keys.admitAll(scopes, Date.now());
    for (const [name, value] of Object.entries(rateLimitHeaders(decision.state))) res.setHeader(name, value);
    if (!decision.admitted) {
      const byUser = decision.scope !== principal.keyId;
      this.hooks.limited(byUser ? `user_${decision.limit}` : decision.limit);
      const why = (byUser ? WHY_USER : WHY)[decision.limit](decision.value);
      throw new ApiError("rate_limited", why, { retryAfterS: decision.retryAfterMs / 1000 });
    }
    const { ticket } = decision;
    // "close" ends every answer: sent whole, streamed to [DONE], failed, or the caller gone mid-way; a caller
    // already gone by now has had its "close", so the slot is given back at once
    res.once("close", () => ticket.release());
    if (res.destroyed) ticket.release();
    return { debit: (tokens) => ticket.debit(tokens, Date.now()) };
  }

  /** The key's counters, and its user's over all their keys. */
  private scopesOf(principal: Principal): Scope[] {
    const scopes = [{ key: principal.keyId, limits: this.limitsOf(principal) }];
    if (principal.kind === "user") scopes.push({ key: userScope(principal.userId), limits: this.userLimitsOf(principal.userId) });
    return scopes;
  }

  /** Each limit from the key's override when it has one, else the operator's default. */
  private limitsOf(principal: Principal): Limits {
    return effective(this.hooks.overrides(principal), this.settings.keyDefaults);
  }

  /** Each per-user limit from the user's override when they have one, else the operator's default. */
  private userLimitsOf(userId: number): Limits {
    return effective(this.hooks.userOverrides(userId), this.settings.userDefaults);
  }
}

function effective(own: KeyLimits | undefined, defaults: Limits): Limits {
  return {
    concurrency: own?.maxConcurrency ?? defaults.concurrency,
    rpm: own?.rpm ?? defaults.rpm,
    tpm: own?.tpm ?? defaults.tpm,
  };
}
