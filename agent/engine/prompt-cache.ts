// The provider's prompt cache (DESIGN §9) as bookkeeping: which of the context's sequences holds which caller
// scope's last conversation, since when, and which one a new session takes. Each owner (an API key, sealed as an
// HMAC beside its scopes) gets a fair share: a caller evicts another's conversation only while it holds fewer than
// that one does (issue 41). Pure; the engine does the KV work.

export interface CacheEntry<S> {
  readonly sequence: S;
  /** The scope whose conversation the sequence holds; undefined while it holds nothing. */
  scope?: string;
  /** Whose scope it is (the sealed `cache_owner`); a scope sealed without one is an owner of its own. */
  owner?: string;
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

  /**
   * The sequence a session takes: its scope's own, else an empty one, else one to clear: the least recently used
   * conversation of the owner holding the most, or the session's own owner's when that one holds as many.
   */
  take(scope: string | undefined, now: number, owner?: string): Lease<S> {
    const own = scope === undefined ? undefined : this.entries.find((e) => e.scope === scope && !this.isExpired(e, now));
    if (own) return { entry: own, hit: true, evict: false };
    const empty = this.entries.find((e) => e.scope === undefined);
    if (empty) return { entry: empty, hit: false, evict: false };
    const held = new Map<string, CacheEntry<S>[]>();
    for (const entry of this.entries) {
      const name = ownerOf(entry);
      held.set(name, [...(held.get(name) ?? []), entry]);
    }
    const most = Math.max(...[...held.values()].map((entries) => entries.length));
    const mine = owner === undefined ? [] : (held.get(owner) ?? []);
    const candidates = mine.length >= most ? mine : [...held.values()].filter((entries) => entries.length === most).flat();
    const oldest = candidates.reduce((a, b) => (b.usedAt < a.usedAt ? b : a));
    return { entry: oldest, hit: false, evict: true };
  }

  /** The session on `entry` ended well: it now holds `scope`'s conversation, for `owner`. */
  keep(entry: CacheEntry<S>, scope: string, now: number, owner?: string): void {
    entry.scope = scope;
    entry.owner = owner;
    entry.usedAt = now;
  }

  /** The sequence was cleared: it holds nothing. */
  forget(entry: CacheEntry<S>): void {
    entry.scope = undefined;
    entry.owner = undefined;
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

  /** Conversations `owner` holds (tests and logs). */
  heldBy(owner: string): number {
    return this.entries.filter((e) => e.scope !== undefined && ownerOf(e) === owner).length;
  }

  private isExpired(entry: CacheEntry<S>, now: number): boolean {
    return now - entry.usedAt >= this.ttlMs;
  }
}

/** The name an entry's share is counted under: its owner, else its scope (one sealed before owners, or without one). */
const ownerOf = (entry: CacheEntry<unknown>): string => entry.owner ?? `scope:${entry.scope}`;
