// User API keys on the hot path: an in-memory cache in front of the store so checking a key does not touch
// disk, revocation that evicts at once, last-used and usage counts written in batches, not per request, and
// each key's rate-limit overrides, re-read now and then so `svc-gateway keys limit` reaches a running gateway.
import type { Usage } from "../../src/receipt-types.ts";
import { secretHash } from "./secret.ts";
import type { KeyActivity, KeyLimits, KeyOwner, KeyRecord, KeyStore } from "./key-store.ts";

/** Enough for every live key of a large deployment; past it the oldest entries are dropped. */
const CACHE_LIMIT = 10_000;
const ACTIVITY_FLUSH_MS = 1_000;
/** How long a key's rate-limit overrides are trusted before the store is asked again. */
export const LIMITS_REFRESH_MS = 10_000;

export class UserKeys {
  private readonly cache = new Map<string, KeyOwner>();
  private pending = new Map<string, KeyActivity>();
  private readonly limitsCache = new Map<string, { limits: KeyLimits | undefined; readAt: number }>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    readonly store: KeyStore,
    private readonly onFlushError: (err: unknown) => void,
    flushMs = ACTIVITY_FLUSH_MS,
  ) {
    this.timer = setInterval(() => this.flushQuietly(), flushMs).unref();
  }

  /** The owner of a live key with this secret, or undefined. */
  verify(secret: string): KeyOwner | undefined {
    const hash = secretHash(secret);
    let owner = this.cache.get(hash);
    if (owner === undefined) {
      owner = this.store.liveKey(hash);
      if (owner === undefined) return undefined;
      if (this.cache.size >= CACHE_LIMIT) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(hash, owner);
    }
    this.activity(owner.keyId).lastUsedAt = Date.now();
    return owner;
  }

  /** The key's rate-limit overrides, at most LIMITS_REFRESH_MS old. */
  limits(keyId: string, now = Date.now()): KeyLimits | undefined {
    const cached = this.limitsCache.get(keyId);
    if (cached !== undefined && now - cached.readAt < LIMITS_REFRESH_MS) return cached.limits;
    const limits = this.store.keyLimits(keyId);
    this.limitsCache.delete(keyId); // re-inserted last, so the oldest read is the first dropped
    if (this.limitsCache.size >= CACHE_LIMIT) this.limitsCache.delete(this.limitsCache.keys().next().value!);
    this.limitsCache.set(keyId, { limits, readAt: now });
    return limits;
  }

  create(userId: number, name: string): { key: KeyRecord; secret: string } {
    return this.store.createKey(userId, name);
  }

  list(userId: number): KeyRecord[] {
    this.flush(); // the page shows what has been counted so far, not what was last written
    return this.store.listKeys(userId);
  }

  /** Revokes the user's own key; the very next request with it is refused. False when no such live key. */
  revoke(userId: number, keyId: string): boolean {
    const hash = this.store.revokeKey(userId, keyId);
    if (hash === undefined) return false;
    this.cache.delete(hash);
    return true;
  }

  /** Counts one verified completion (its receipt's usage) against the key that asked for it. */
  noteUsage(owner: KeyOwner, usage: Usage): void {
    const a = this.activity(owner.keyId);
    a.requests += 1;
    a.promptTokens += usage.prompt_tokens;
    a.completionTokens += usage.completion_tokens;
  }

  flush(): void {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    this.store.recordActivity(batch);
  }

  /** Stops the batching and writes what is pending; the store stays open for whoever opened it. */
  close(): void {
    clearInterval(this.timer);
    this.flushQuietly();
  }

  /** Counts are bookkeeping: a failed write is reported and the counts are dropped, never the request. */
  private flushQuietly(): void {
    try {
      this.flush();
    } catch (err) {
      this.onFlushError(err);
    }
  }

  private activity(keyId: string): KeyActivity {
    let a = this.pending.get(keyId);
    if (a === undefined) {
      a = { lastUsedAt: Date.now(), requests: 0, promptTokens: 0, completionTokens: 0 };
      this.pending.set(keyId, a);
    }
    return a;
  }
}
