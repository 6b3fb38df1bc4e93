// User API keys on the hot path: an in-memory cache in front of the store so checking a key does not touch
// disk, revocation that evicts at once, and last-used and usage counts written in batches, not per request.
import type { Usage } from "../../src/receipt-types.ts";
import { secretHash } from "./secret.ts";
import type { KeyActivity, KeyOwner, KeyRecord, KeyStore } from "./key-store.ts";

/** Enough for every live key of a large deployment; past it the oldest entries are dropped. */
const CACHE_LIMIT = 10_000;
const ACTIVITY_FLUSH_MS = 1_000;

export class UserKeys {
  private readonly cache = new Map<string, KeyOwner>();
  private pending = new Map<string, KeyActivity>();
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
