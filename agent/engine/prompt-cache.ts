// The provider's prompt cache (DESIGN §9) as bookkeeping: which of the context's sequences holds which caller
// scope's last conversation, since when, and which one a new session takes. Pure; the engine does the KV work.

export interface CacheEntry<S> {
  readonly sequence: S;
  /** The scope whose conversation the sequence holds; undefined while it holds nothing. */
  scope?: string;
  /** When that scope last finished a session on it (ms). */
  usedAt: number;
}

export interface Lease<S> {
  entry: CacheEntry<S>;
  /** The sequence holds this scope's earlier conversation, so the prompt's common prefix may be reused. */
  hit: boolean;
  /** The sequence holds another scope's conversation (the least recently used): clear it before use. */
  evict: boolean;
}

export class PromptCache<S> {
  private readonly entries: CacheEntry<S>[];

  constructor(sequences: readonly S[], private readonly ttlMs: number) {
    if (sequences.length === 0) throw new Error("a prompt cache needs at least one sequence");
    this.entries = sequences.map((sequence) => ({ sequence, usedAt: 0 }));
  }

  /** The sequence a session takes: its scope's own, else an empty one, else the least recently used one. */
  take(scope: string | undefined, now: number): Lease<S> {
    const own = scope === undefined ? undefined : this.entries.find((e) => e.scope === scope && !this.isExpired(e, now));
    if (own) return { entry: own, hit: true, evict: false };
    const empty = this.entries.find((e) => e.scope === undefined);
    if (empty) return { entry: empty, hit: false, evict: false };
    const oldest = this.entries.reduce((a, b) => (b.usedAt < a.usedAt ? b : a));
    return { entry: oldest, hit: false, evict: true };
  }

  /** The session on `entry` ended well: it now holds `scope`'s conversation. */
  keep(entry: CacheEntry<S>, scope: string, now: number): void {
    entry.scope = scope;
    entry.usedAt = now;
  }

  /** The sequence was cleared: it holds nothing. */
  forget(entry: CacheEntry<S>): void {
    entry.scope = undefined;
    entry.usedAt = 0;
  }

  /** Entries whose conversation is past the TTL, to be cleared. */
  expired(now: number): CacheEntry<S>[] {
    return this.entries.filter((e) => e.scope !== undefined && this.isExpired(e, now));
  }

  /** When the next held conversation expires (ms), or undefined when none is held. */
  nextExpiry(): number | undefined {
    const held = this.entries.filter((e) => e.scope !== undefined);
    return held.length === 0 ? undefined : Math.min(...held.map((e) => e.usedAt)) + this.ttlMs;
  }

  /** How many conversations are held (tests and logs). */
  get held(): number {
    return this.entries.filter((e) => e.scope !== undefined).length;
  }

  get size(): number {
    return this.entries.length;
  }

  private isExpired(entry: CacheEntry<S>, now: number): boolean {
    return now - entry.usedAt >= this.ttlMs;
  }
}
