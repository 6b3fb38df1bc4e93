// docs/operator-guide.md "Rate limits" at the unit level: the token bucket, a key's concurrency, requests-per-minute and
// tokens-per-minute decisions, OpenAI's headers, failed authentication per address, and the limiter that
// wires them into a request. Time is passed in, so nothing here waits.
import { EventEmitter } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import type { Principal } from "../../../../gateway/keys/auth.ts";
import { addressKey, AuthFailures, clientAddress } from "../../../../gateway/keys/auth-failures.ts";
import type { KeyLimits } from "../../../../gateway/keys/key-store.ts";
import { Limiter, type LimitSettings } from "../../../../gateway/keys/limiter.ts";
import { formatReset, rateLimitHeaders } from "../../../../gateway/keys/rate-limit-headers.ts";
import { RateLimits, type Decision, type Ticket } from "../../../../gateway/keys/rate-limits.ts";
import { TokenBucket } from "../../../../gateway/keys/token-bucket.ts";
import { ApiError } from "../../../../src/errors.ts";

const T0 = 1_700_000_000_000;
const admitted = (d: Decision): Ticket => {
  if (!d.admitted) throw new Error(`refused by ${d.limit}`);
  return d.ticket;
};

describe("Rate limits: the token bucket", () => {
  it("starts full, refills continuously at capacity per period, and never beyond capacity", () => {
    const bucket = new TokenBucket(60, 60_000, T0);
    expect(bucket.available(T0)).toBe(60);
    bucket.take(60, T0);
    expect(bucket.available(T0 + 1_000)).toBeCloseTo(1);
    expect(bucket.available(T0 + 600_000)).toBe(60);
  });

  it("says how long until a level is reached and until it is full; a debit may take it below zero", () => {
    const bucket = new TokenBucket(600, 60_000, T0);
    bucket.take(900, T0);
    expect(bucket.available(T0)).toBe(-300);
    expect(bucket.msUntil(1, T0)).toBe(30_100);
    expect(bucket.msUntilFull(T0)).toBe(90_000);
    expect(bucket.available(T0 + 30_100)).toBeGreaterThanOrEqual(1);
  });

  it("a clock that steps back neither refills nor drains it", () => {
    const bucket = new TokenBucket(10, 60_000, T0);
    bucket.take(5, T0);
    expect(bucket.available(T0 - 30_000)).toBe(5);
    expect(bucket.available(T0)).toBe(5);
  });

  it("a new limit keeps what was taken, capped at the new capacity", () => {
    const bucket = new TokenBucket(10, 60_000, T0);
    bucket.take(4, T0);
    bucket.resize(20, T0);
    expect(bucket.available(T0)).toBe(6);
    bucket.resize(3, T0);
    expect(bucket.available(T0)).toBe(3);
  });
});

describe("Rate limits: per-key limits", () => {
  it("concurrency: a key holds at most N requests in flight; a slot frees when its ticket is released, once", () => {
    const limits = new RateLimits();
    const a = admitted(limits.admit("k", { concurrency: 2 }, T0));
    admitted(limits.admit("k", { concurrency: 2 }, T0));
    const refused = limits.admit("k", { concurrency: 2 }, T0);
    expect(refused).toMatchObject({ admitted: false, limit: "concurrency", value: 2, retryAfterMs: 1_000 });
    a.release();
    a.release(); // a second release (say, error then close) must not free a slot it does not hold
    admitted(limits.admit("k", { concurrency: 2 }, T0));
    expect(limits.admit("k", { concurrency: 2 }, T0).admitted).toBe(false);
  });

  it("each key is counted on its own", () => {
    const limits = new RateLimits();
    admitted(limits.admit("a", { concurrency: 1 }, T0));
    expect(limits.admit("a", { concurrency: 1 }, T0).admitted).toBe(false);
    admitted(limits.admit("b", { concurrency: 1 }, T0));
  });

  it("requests per minute: a burst of N, then one more every 60/N s; Retry-After is when the next one passes", () => {
    const limits = new RateLimits();
    for (let i = 0; i < 3; i++) admitted(limits.admit("k", { rpm: 3 }, T0)).release();
    const refused = limits.admit("k", { rpm: 3 }, T0);
    expect(refused).toMatchObject({ admitted: false, limit: "rpm", value: 3, retryAfterMs: 20_000 });
    expect(limits.admit("k", { rpm: 3 }, T0 + 19_999).admitted).toBe(false);
    admitted(limits.admit("k", { rpm: 3 }, T0 + 20_000));
  });

  it("a refused request costs the key nothing: it neither takes a request nor holds a slot", () => {
    const limits = new RateLimits();
    admitted(limits.admit("k", { concurrency: 1, rpm: 2 }, T0));
    for (let i = 0; i < 10; i++) expect(limits.admit("k", { concurrency: 1, rpm: 2 }, T0)).toMatchObject({ limit: "concurrency" });
    expect(limits.admit("k", { rpm: 2 }, T0).state.requests).toMatchObject({ remaining: 0 });
  });

  it("tokens per minute: admitted while a token is left, the receipt's total debited after, refused until refilled", () => {
    const limits = new RateLimits();
    const first = admitted(limits.admit("k", { tpm: 100 }, T0));
    // the size is unknown up front, so a second request passes too: both debits land afterwards
    const second = admitted(limits.admit("k", { tpm: 100 }, T0));
    first.debit(90, T0);
    second.debit(60, T0);
    const refused = limits.admit("k", { tpm: 100 }, T0);
    // 50 below zero, one token more to pass: 51 tokens at 100 a minute
    expect(refused).toMatchObject({ admitted: false, limit: "tpm", value: 100, retryAfterMs: 30_600 });
    expect(refused.state.tokens).toEqual({ limit: 100, remaining: 0, resetMs: 90_000 });
    admitted(limits.admit("k", { tpm: 100 }, T0 + 30_600));
  });

  it("reports each configured per-minute limit as OpenAI does, and nothing for unlimited ones", () => {
    const limits = new RateLimits();
    const d = limits.admit("k", { rpm: 60, tpm: 1_000, concurrency: 5 }, T0);
    expect(d.state).toEqual({ requests: { limit: 60, remaining: 59, resetMs: 1_000 }, tokens: { limit: 1_000, remaining: 1_000, resetMs: 0 } });
    expect(limits.admit("j", {}, T0).state).toEqual({});
  });

  it("a limit changed while a key is in use (an override set) applies to its next request", () => {
    const limits = new RateLimits();
    admitted(limits.admit("k", { rpm: 100 }, T0));
    admitted(limits.admit("k", { rpm: 2 }, T0));
    admitted(limits.admit("k", { rpm: 2 }, T0));
    expect(limits.admit("k", { rpm: 2 }, T0)).toMatchObject({ admitted: false, limit: "rpm", value: 2 });
    admitted(limits.admit("k", {}, T0));
  });

  it("idle keys are forgotten; a key with a request in flight or a debt is not", () => {
    const limits = new RateLimits();
    admitted(limits.admit("idle", { rpm: 60 }, T0)).release();
    admitted(limits.admit("busy", { concurrency: 1 }, T0));
    const owing = admitted(limits.admit("owing", { tpm: 10 }, T0));
    owing.debit(50, T0);
    owing.release();
    limits.sweep(T0 + 60_000);
    expect(limits.size).toBe(2);
    limits.sweep(T0 + 10 * 60_000);
    expect(limits.size).toBe(1);
  });
});

describe("Rate limits: OpenAI's headers", () => {
  it("reset times read like OpenAI's: 20ms, 1s, 1.5s, 6m0s, 1h0m0s, rounded up", () => {
    expect([0, 19.2, 999, 1_000, 1_500, 8_640, 60_000, 360_000, 90_500, 3_600_000].map(formatReset)).toEqual([
      "0s", "20ms", "999ms", "1s", "1.5s", "8.64s", "1m0s", "6m0s", "1m30.5s", "1h0m0s",
    ]);
  });

  it("three headers per configured limit, none for an unlimited one", () => {
    expect(rateLimitHeaders({ requests: { limit: 60, remaining: 59, resetMs: 1_000 } })).toEqual({
      "x-ratelimit-limit-requests": "60",
      "x-ratelimit-remaining-requests": "59",
      "x-ratelimit-reset-requests": "1s",
    });
    expect(rateLimitHeaders({ tokens: { limit: 1_000, remaining: 0, resetMs: 360_000 } })).toEqual({
      "x-ratelimit-limit-tokens": "1000",
      "x-ratelimit-remaining-tokens": "0",
      "x-ratelimit-reset-tokens": "6m0s",
    });
    expect(rateLimitHeaders({})).toEqual({});
  });
});

describe("Rate limits: failed authentication per client address", () => {
  it("an address may fail N times a minute; then it waits until the allowance refills, and waiting is not counted", () => {
    const failures = new AuthFailures(3);
    for (let i = 0; i < 3; i++) expect(failures.fail("10.0.0.1", T0)).toBeUndefined();
    expect(failures.fail("10.0.0.1", T0)).toBe(20_000);
    expect(failures.fail("10.0.0.1", T0 + 10_000)).toBe(10_000);
    expect(failures.fail("10.0.0.2", T0)).toBeUndefined(); // another address is not slowed
    expect(failures.fail("10.0.0.1", T0 + 20_000)).toBeUndefined();
  });

  it("forgets addresses whose allowance is whole again", () => {
    const failures = new AuthFailures(3);
    failures.fail("10.0.0.1", T0);
    failures.sweep(T0 + 19_000);
    expect(failures.size).toBe(1);
    failures.sweep(T0 + 20_000);
    expect(failures.size).toBe(0);
  });

  it("IPv4 counts per address, also written IPv4-mapped; IPv6 per /64", () => {
    expect(addressKey("192.0.2.7")).toBe("192.0.2.7");
    expect(addressKey("::ffff:192.0.2.7")).toBe("192.0.2.7");
    expect(addressKey("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(addressKey("2001:0db8:0001:0002:ffff:ffff:ffff:ffff")).toBe("2001:db8:1:2::/64");
    expect(addressKey("2001:db8::")).toBe("2001:db8:0:0::/64");
    expect(addressKey("::1")).toBe("0:0:0:0::/64");
    expect(addressKey("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
  });

  it("X-Forwarded-For is read only when the operator trusts a proxy, and then only its last entry", () => {
    const req = (forwarded?: string) =>
      ({ socket: { remoteAddress: "127.0.0.1" }, headers: forwarded === undefined ? {} : { "x-forwarded-for": forwarded } }) as unknown as IncomingMessage;
    expect(clientAddress(req("203.0.113.9"), false)).toBe("127.0.0.1");
    expect(clientAddress(req("198.51.100.1, 203.0.113.9"), true)).toBe("203.0.113.9");
    expect(clientAddress(req("203.0.113.9, not-an-address"), true)).toBe("127.0.0.1");
    expect(clientAddress(req(), true)).toBe("127.0.0.1");
  });
});

/** A response as far as the limiter touches it: headers and the close event. */
class FakeResponse extends EventEmitter {
  headers: Record<string, string> = {};
  destroyed = false;
  setHeader(name: string, value: string) {
    this.headers[name] = value;
  }
}

describe("Rate limits: the limiter on a request's way in", () => {
  const setup = (settings: Partial<LimitSettings> = {}, overrides: Record<string, KeyLimits> = {}, userOverrides: Record<number, KeyLimits> = {}) => {
    const limited: string[] = [];
    const limiter = new Limiter(
      { keyDefaults: {}, userDefaults: {}, authFailuresPerMinute: 2, trustProxy: false, ...settings },
      { overrides: (p: Principal) => overrides[p.keyId], userOverrides: (id) => userOverrides[id], limited: (limit) => limited.push(limit) },
    );
    return { limiter, limited };
  };
  const operator: Principal = { kind: "operator", keyId: "op_1" };
  const user: Principal = { kind: "user", keyId: "key_1", userId: 1 };
  const req = { socket: { remoteAddress: "192.0.2.1" }, headers: {} } as unknown as IncomingMessage;
  const refuse = () => {
    throw new ApiError("invalid_api_key", "bad key");
  };
  const caught = (fn: () => unknown): ApiError => {
    try {
      fn();
    } catch (err) {
      return err as ApiError;
    }
    throw new Error("expected an error");
  };
  const refused = async (fn: () => Promise<unknown>): Promise<ApiError> => {
    try {
      await fn();
    } catch (err) {
      return err as ApiError;
    }
    throw new Error("expected an error");
  };

  it("a 401 past the address's allowance becomes 429 rate_limited (wait) with Retry-After; a valid key still passes", async () => {
    const { limiter, limited } = setup();
    expect((await refused(() => limiter.authenticate(req, refuse))).status).toBe(401);
    expect((await refused(() => limiter.authenticate(req, refuse))).status).toBe(401);
    const slowed = await refused(() => limiter.authenticate(req, refuse));
    expect(slowed.toEnvelope().error).toMatchObject({ code: "rate_limited", type: "rate_limit_error", svc_action: "wait" });
    expect(slowed.status).toBe(429);
    expect(slowed.retryAfterS).toBeGreaterThanOrEqual(1);
    expect(await limiter.authenticate(req, async () => operator)).toBe(operator);
    expect(limited).toEqual(["auth"]);
  });

  it("errors other than a bad key pass through uncounted", async () => {
    const { limiter } = setup({ authFailuresPerMinute: 1 });
    const boom = () => {
      throw new ApiError("internal_error", "store down");
    };
    for (let i = 0; i < 3; i++) expect((await refused(() => limiter.authenticate(req, boom))).code).toBe("internal_error");
    expect((await refused(() => limiter.authenticate(req, refuse))).status).toBe(401);
  });

  it("over a key's limit: 429 with the headers still set; the slot is freed when the response closes", () => {
    const { limiter, limited } = setup({ keyDefaults: { concurrency: 1, rpm: 10 } });
    const first = new FakeResponse();
    limiter.admit(operator, first as unknown as ServerResponse);
    expect(first.headers["x-ratelimit-limit-requests"]).toBe("10");
    expect(first.headers["x-ratelimit-remaining-requests"]).toBe("9");
    const second = new FakeResponse();
    const error = caught(() => limiter.admit(operator, second as unknown as ServerResponse));
    expect([error.status, error.code, error.retryAfterS]).toEqual([429, "rate_limited", 1]);
    expect(second.headers["x-ratelimit-remaining-requests"]).toBe("9");
    expect(limited).toEqual(["concurrency"]);
    first.emit("close");
    limiter.admit(operator, new FakeResponse() as unknown as ServerResponse);
  });

  it("a caller gone before its admission does not keep the slot", () => {
    const { limiter } = setup({ keyDefaults: { concurrency: 1 } });
    const gone = Object.assign(new FakeResponse(), { destroyed: true });
    limiter.admit(operator, gone as unknown as ServerResponse);
    limiter.admit(operator, new FakeResponse() as unknown as ServerResponse);
  });

  it("a user key's override beats the operator's default, limit by limit; null keeps the default", () => {
    const { limiter } = setup({ keyDefaults: { rpm: 100, tpm: 5_000 } }, { key_1: { maxConcurrency: null, rpm: 1, tpm: null } });
    const res = new FakeResponse();
    limiter.admit(user, res as unknown as ServerResponse);
    expect(res.headers["x-ratelimit-limit-requests"]).toBe("1");
    expect(res.headers["x-ratelimit-limit-tokens"]).toBe("5000");
    expect(caught(() => limiter.admit(user, new FakeResponse() as unknown as ServerResponse)).message).toContain("1 requests per minute");
    limiter.admit(operator, new FakeResponse() as unknown as ServerResponse);
  });

  it("the receipt's tokens are debited through the admission", () => {
    const { limiter, limited } = setup({ keyDefaults: { tpm: 10 } });
    const res = new FakeResponse();
    limiter.admit(operator, res as unknown as ServerResponse).debit(25);
    res.emit("close");
    const error = caught(() => limiter.admit(operator, new FakeResponse() as unknown as ServerResponse));
    expect(error.code).toBe("rate_limited");
    expect(error.retryAfterS).toBeGreaterThanOrEqual(90);
    expect(limited).toEqual(["tpm"]);
  });

  it("a user with 10 keys cannot exceed the user's limit: each key is under its own, the user's total is refused", () => {
    const { limiter, limited } = setup({ keyDefaults: { rpm: 4, concurrency: 1 }, userDefaults: { rpm: 5 } });
    const keyOf = (i: number): Principal => ({ kind: "user", keyId: `key_${i}`, userId: 7 });
    const outcomes = Array.from({ length: 10 }, (_, i) => {
      try {
        limiter.admit(keyOf(i), new FakeResponse() as unknown as ServerResponse);
        return "admitted";
      } catch (err) {
        return (err as ApiError).message;
      }
    });
    expect(outcomes.filter((o) => o === "admitted")).toHaveLength(5);
    expect(outcomes.slice(5)).toEqual(Array(5).fill("This key's user is over their limit of 5 requests per minute over all their API keys; retry after the Retry-After seconds."));
    expect(limited).toEqual(Array(5).fill("user_rpm"));
    // another user, and an operator key, are untouched by this user's total
    limiter.admit({ kind: "user", keyId: "key_x", userId: 8 }, new FakeResponse() as unknown as ServerResponse);
    limiter.admit(operator, new FakeResponse() as unknown as ServerResponse);
  });

  it("a user's concurrency counts every key's requests in flight; a refusal by the user takes nothing from the key", () => {
    const { limiter, limited } = setup({ keyDefaults: { rpm: 2 } }, {}, { 7: { maxConcurrency: 2, rpm: null, tpm: null } });
    const a = new FakeResponse();
    limiter.admit({ kind: "user", keyId: "key_a", userId: 7 }, a as unknown as ServerResponse);
    limiter.admit({ kind: "user", keyId: "key_b", userId: 7 }, new FakeResponse() as unknown as ServerResponse);
    const refused = new FakeResponse();
    const error = caught(() => limiter.admit({ kind: "user", keyId: "key_c", userId: 7 }, refused as unknown as ServerResponse));
    expect([error.status, error.code]).toEqual([429, "rate_limited"]);
    expect(error.message).toContain("2 request(s) in flight over all their API keys");
    expect(limited).toEqual(["user_concurrency"]);
    // key_c's own bucket was not charged by the refusal: both of its 2 rpm are left once a slot frees
    a.emit("close");
    const res = new FakeResponse();
    limiter.admit({ kind: "user", keyId: "key_c", userId: 7 }, res as unknown as ServerResponse);
    expect(res.headers["x-ratelimit-remaining-requests"]).toBe("1");
  });

  it("the headers report the scarcer quota: the user's when fewer are left there than on the key", () => {
    const { limiter } = setup({ keyDefaults: { rpm: 100 }, userDefaults: { rpm: 3 } });
    const res = new FakeResponse();
    limiter.admit(user, res as unknown as ServerResponse);
    expect([res.headers["x-ratelimit-limit-requests"], res.headers["x-ratelimit-remaining-requests"]]).toEqual(["3", "2"]);
  });
});
