// Failed authentication slowed per client address: each address may fail `perMinute` times a minute (a token
// bucket), and past that its failures are answered 429 instead of 401. A valid key never passes through here.
import { isIPv4, isIPv6 } from "node:net";
import type { IncomingMessage } from "node:http";
import { BoundedMap } from "../../src/bounded-map.ts";
import { TokenBucket } from "./token-bucket.ts";
import { addressKey } from "../http/address-key.ts";

export { addressKey };

const MINUTE_MS = 60_000;
/** Addresses remembered at most; an attacker with many addresses cannot grow the map without bound. */
const MAX_ADDRESSES = 100_000;
const SWEEP_EVERY = 1_000;

export class AuthFailures {
  private readonly addresses = new BoundedMap<string, TokenBucket>(MAX_ADDRESSES);
  private failures = 0;

  constructor(private readonly perMinute: number) {}

  /** Notes a failed attempt from `address`; returns the milliseconds to wait when it is over its allowance. */
  fail(address: string, now: number): number | undefined {
    if (++this.failures % SWEEP_EVERY === 0) this.sweep(now);
    let bucket = this.addresses.get(address);
    if (bucket === undefined) {
      bucket = new TokenBucket(this.perMinute, MINUTE_MS, now);
      this.addresses.set(address, bucket);
    }
    // failures while slowed are not counted again, so the wait announced in Retry-After is the real one
    if (bucket.available(now) < 1) return bucket.msUntil(1, now);
    bucket.take(1, now);
    return undefined;
  }

  get size(): number {
    return this.addresses.size;
  }

  /** Forgets addresses whose allowance is whole again. */
  sweep(now: number): void {
    for (const [address, bucket] of this.addresses) if (bucket.msUntilFull(now) === 0) this.addresses.delete(address);
  }
}

/**
 * Who is failing: the peer's address, or with `trustProxy` the last X-Forwarded-For entry (the one the
 * operator's own proxy appended; earlier entries are whatever the caller wrote). IPv6 callers are counted by
 * their /64, which one subscriber usually holds whole.
 */
export function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  const forwarded = trustProxy ? lastForwarded(req.headers["x-forwarded-for"]) : undefined;
  return addressKey(forwarded ?? req.socket.remoteAddress ?? "unknown");
}

function lastForwarded(header: string | string[] | undefined): string | undefined {
  const joined = Array.isArray(header) ? header.join(",") : header;
  const last = joined?.split(",").at(-1)?.trim();
  return last !== undefined && (isIPv4(last) || isIPv6(last)) ? last : undefined;
}
