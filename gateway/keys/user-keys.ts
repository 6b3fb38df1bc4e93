// User API keys on the hot path: an in-memory cache of live key hashes in front of the store, filled on a miss, so
// a request with a known key touches no database; revocation that evicts at once, here and (through the store's
// watch) on every other gateway on the same store; last-used and usage counts (per key, and per key, provider and UTC
// day) written in batches, not per request, each key's and user's rate-limit overrides, re-read now and then so
// `svc-gateway keys limit` and `users limit` reach a running gateway, and the cap on a user's live keys.
import { BoundedMap } from "../../src/bounded-map.ts";
import type { Usage } from "../../src/receipt/types.ts";
import { secretHash } from "./secret.ts";
import { DEFAULT_MAX_KEYS_PER_USER, type DailyUsage, type KeyActivity, type KeyLimits, type KeyOwner, type KeyRecord, type KeyStore } from "./key-store.ts";
import { utcDay } from "./usage.ts";

/** Enough for every live key of a large deployment; past it the oldest entries are dropped. */
const CACHE_LIMIT = 10_000;
const ACTIVITY_FLUSH_MS = 1_000;
/** How long a key's rate-limit overrides are trusted before the store is asked again. */
export const LIMITS_REFRESH_MS = 10_000;
/** Longer than any key lookup can take (a store connection gives up after 2 s). */
const REVOKED_MEMORY_MS = 30_000;

export class UserKeys {
  private readonly cache = new BoundedMap<string, KeyOwner>(CACHE_LIMIT);
  private pending = new Map<string, KeyActivity>();
  /** Per-day counts not yet written, by day, key and provider. */
  private pendingDays = new Map<string, DailyUsage>();
  private readonly limitsCache = new BoundedMap<string, { limits: KeyLimits | undefined; readAt: number; reading: boolean }>(CACHE_LIMIT);
  /** Keys revoked and not in the cache, by when: a lookup of theirs in flight must not cache them afterwards. */
  private readonly revokedWhileReading = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    readonly store: KeyStore,
    private readonly onFlushError: (err: unknown) => void,
    flushMs = ACTIVITY_FLUSH_MS,
    /** `serve --max-keys-per-user`: past it, `create` throws KeyCapReached. */
    readonly maxKeysPerUser = DEFAULT_MAX_KEYS_PER_USER,
  ) {
    this.timer = setInterval(() => void this.flushQuietly(), flushMs).unref();
  }

  /** Starts listening for revocations made by other processes and replicas on the same store. */
  watch(): Promise<void> {
    return this.store.watchRevocations((hash) => this.forget(hash));
  }

  /** The owner of a live key with this secret, or undefined; only a key not in the cache asks the store. */
  async verify(secret: string): Promise<KeyOwner | undefined> {
    const hash = secretHash(secret);
    let owner = this.cache.get(hash);
    if (owner === undefined) {
      const found = await this.store.liveKey(hash);
      if (found === undefined) return undefined;
      // the limits are read with the key, so its first request is already held to its overrides
      await Promise.all([this.readLimits(found.keyId), this.readLimits(`user:${found.userId}`)]);
      if (this.revokedWhileReading.delete(hash)) return undefined;
      this.cache.set(hash, found);
      owner = found;
    }
    this.activity(owner.keyId).lastUsedAt = Date.now();
    return owner;
  }

  /** Drops a revoked key from the cache: the store's watch calls it for revocations made anywhere. */
  forget(hash: string): void {
    if (!this.cache.delete(hash)) this.revokedWhileReading.set(hash, Date.now());
  }

  /** The key's rate-limit overrides as last read (re-read in the background once LIMITS_REFRESH_MS old). */
  limits(keyId: string, now = Date.now()): KeyLimits | undefined {
    return this.cachedLimits(keyId, now);
  }

  /** The user's rate-limit overrides (over all their keys), as last read. */
  userLimits(userId: number, now = Date.now()): KeyLimits | undefined {
    return this.cachedLimits(`user:${userId}`, now);
  }

  /** A new key for the user; throws KeyCapReached when they already hold `maxKeysPerUser` live ones. */
  create(userId: number, name: string): Promise<{ key: KeyRecord; secret: string }> {
    return this.store.createKey(userId, name, Date.now(), this.maxKeysPerUser);
  }

  async list(userId: number): Promise<KeyRecord[]> {
    await this.flush(); // the page shows what has been counted so far, not what was last written
    return this.store.listKeys(userId);
  }

  /** Revokes the user's own key; the very next request with it is refused. False when no such live key. */
  async revoke(userId: number, keyId: string): Promise<boolean> {
    const hash = await this.store.revokeKey(userId, keyId);
    if (hash === undefined) return false;
    this.forget(hash);
    return true;
  }

  /**
   * Counts one verified completion (its receipt's usage) against the key that asked for it, on today's UTC
   * day and the provider that served it. Operator keys count only in the per-day table: they have no row.
   */
  noteUsage(who: { kind: "user" | "operator"; keyId: string }, usage: Usage, providerId: string | undefined, now = Date.now()): void {
    if (who.kind === "user") {
      const a = this.activity(who.keyId);
      a.requests += 1;
      a.promptTokens += usage.prompt_tokens;
      a.completionTokens += usage.completion_tokens;
    }
    // the day is taken now, not at the flush, so a request just before midnight UTC counts on its own day
    const day = utcDay(now);
    const provider = providerId ?? "unknown";
    const slot = `${day} ${who.keyId} ${provider}`;
    let d = this.pendingDays.get(slot);
    if (d === undefined) {
      d = { day, keyId: who.keyId, providerId: provider, requests: 0, promptTokens: 0, completionTokens: 0 };
      this.pendingDays.set(slot, d);
    }
    d.requests += 1;
    d.promptTokens += usage.prompt_tokens;
    d.completionTokens += usage.completion_tokens;
  }

  /** Per-day rows from `sinceDay` on, counted up to now (what is pending is written first). */
  async dailyUsage(sinceDay: string, userId?: number): Promise<DailyUsage[]> {
    await this.flush();
    return this.store.dailyUsage(sinceDay, userId);
  }

  async flush(): Promise<void> {
    // a lookup takes milliseconds; what was revoked longer ago than any lookup lasts is forgotten
    for (const [hash, at] of this.revokedWhileReading) if (Date.now() - at > REVOKED_MEMORY_MS) this.revokedWhileReading.delete(hash);
    const writes: Promise<void>[] = [];
    if (this.pending.size > 0) {
      const batch = this.pending;
      this.pending = new Map();
      writes.push(this.store.recordActivity(batch));
    }
    if (this.pendingDays.size > 0) {
      const days = [...this.pendingDays.values()];
      this.pendingDays = new Map();
      writes.push(this.store.recordDailyUsage(days));
    }
    await Promise.all(writes);
  }

  /** Stops the batching and writes what is pending; the store stays open for whoever opened it. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flushQuietly();
  }

  /** Counts are bookkeeping: a failed write is reported and the counts are dropped, never the request. */
  private async flushQuietly(): Promise<void> {
    try {
      await this.flush();
    } catch (err) {
      this.onFlushError(err);
    }
  }

  /** Key ids (`key_…`) and user slots (`user:N`) share one cache; neither can look like the other. */
  private cachedLimits(slot: string, now: number): KeyLimits | undefined {
    const cached = this.limitsCache.get(slot);
    // stale: answered from what was read, while a fresh read runs; a store that is away keeps the last answer
    if (cached === undefined || now - cached.readAt >= LIMITS_REFRESH_MS) void this.readLimits(slot).catch(() => undefined);
    return cached?.limits;
  }

  private async readLimits(slot: string): Promise<void> {
    if (this.limitsCache.get(slot)?.reading) return;
    const previous = this.limitsCache.get(slot);
    if (previous) previous.reading = true;
    try {
      const limits = slot.startsWith("user:") ? await this.store.userLimits(Number(slot.slice(5))) : await this.store.keyLimits(slot);
      // set last, so the oldest read is the first dropped
      this.limitsCache.set(slot, { limits, readAt: Date.now(), reading: false });
    } finally {
      if (previous) previous.reading = false;
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
