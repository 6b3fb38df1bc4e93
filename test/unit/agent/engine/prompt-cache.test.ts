// DESIGN §9's prompt cache as bookkeeping: which sequence a session takes, LRU eviction, the TTL, and how many
// conversations a memory budget buys.
import { describe, expect, it } from "vitest";
import { PromptCache } from "../../../../agent/engine/prompt-cache.ts";
import { cacheSequences, MAX_CACHED_CONVERSATIONS } from "../../../../agent/engine/cache-budget.ts";

const GIB = 1024 ** 3;

describe("Issue 41 PromptCache: each owner (an API key) gets a fair share", () => {
  /** A session of `scope` for `owner` that ends well at `now`. */
  const serve = (cache: PromptCache<string>, scope: string, owner: string | undefined, now: number) => {
    const lease = cache.take(scope, now, owner);
    cache.keep(lease.entry, scope, now, owner);
    return lease;
  };

  it("one owner's many scopes evict only its own conversations once another owner holds fewer", () => {
    const cache = new PromptCache(Array.from({ length: 8 }, (_, i) => `s${i}`), 60_000);
    serve(cache, "victim-conversation", "victim", 0);
    // the flood: 8 prompt_cache_keys of one key, the newest each time
    for (let i = 0; i < 20; i++) serve(cache, `flood-${i}`, "flooder", 1 + i);
    expect(cache.heldBy("victim")).toBe(1);
    expect(cache.heldBy("flooder")).toBe(7);
    expect(cache.take("victim-conversation", 100, "victim")).toMatchObject({ hit: true });
  });

  it("a newcomer takes from the owner holding the most, its least recently used; a session without scope too", () => {
    const cache = new PromptCache(["s0", "s1", "s2"], 60_000);
    serve(cache, "a1", "A", 1);
    serve(cache, "b1", "B", 2);
    serve(cache, "b2", "B", 3);
    const newcomer = cache.take("c1", 4, "C");
    expect([newcomer.entry.scope, newcomer.evict]).toEqual(["b1", true]);
    cache.keep(newcomer.entry, "c1", 4, "C");
    // now each holds one: the least recently used of all goes
    expect(cache.take(undefined, 5).entry.scope).toBe("a1");
  });

  it("among equals, the owner asking evicts its own least recently used rather than another's", () => {
    const cache = new PromptCache(["s0", "s1"], 60_000);
    serve(cache, "b1", "B", 1);
    serve(cache, "a1", "A", 2);
    expect(cache.take("a2", 3, "A").entry.scope).toBe("a1");
  });

  it("scopes sealed without an owner (an older gateway) each count as an owner of their own", () => {
    const cache = new PromptCache(["s0", "s1"], 60_000);
    serve(cache, "x", undefined, 1);
    serve(cache, "y", undefined, 2);
    expect(cache.take("z", 3, undefined).entry.scope).toBe("x");
  });
});

describe("PromptCache: which sequence a session takes", () => {
  it("a scope finds its own sequence; another scope an empty one; with none empty, the least recently used", () => {
    const cache = new PromptCache(["s0", "s1"], 1000);
    const a = cache.take("A", 0);
    expect(a).toMatchObject({ hit: false, evict: false });
    cache.keep(a.entry, "A", 10);
    expect(cache.take("A", 20)).toMatchObject({ entry: a.entry, hit: true });
    const b = cache.take("B", 20);
    expect(b).toMatchObject({ hit: false, evict: false });
    expect(b.entry.sequence).not.toBe(a.entry.sequence);
    cache.keep(b.entry, "B", 30);
    // C finds no empty sequence: A's, used longest ago, is evicted
    expect(cache.take("C", 40)).toMatchObject({ entry: a.entry, hit: false, evict: true });
    cache.keep(a.entry, "A", 50); // A used again: now B is the oldest
    expect(cache.take(undefined, 60)).toMatchObject({ entry: b.entry, hit: false, evict: true });
  });

  it("no scope never hits; a forgotten sequence is empty again", () => {
    const cache = new PromptCache(["s0"], 1000);
    const lease = cache.take(undefined, 0);
    expect(lease.hit).toBe(false);
    cache.keep(lease.entry, "A", 0);
    expect(cache.held).toBe(1);
    cache.forget(lease.entry);
    expect(cache.held).toBe(0);
    expect(cache.take("A", 1)).toMatchObject({ hit: false, evict: false });
  });

  it("past the TTL a conversation is no hit, is listed as expired, and sets when the next expiry is", () => {
    const cache = new PromptCache(["s0", "s1"], 100);
    expect(cache.nextExpiry()).toBeUndefined();
    cache.keep(cache.take("A", 0).entry, "A", 0);
    cache.keep(cache.take("B", 50).entry, "B", 50);
    expect(cache.nextExpiry()).toBe(100);
    expect(cache.expired(99)).toEqual([]);
    expect(cache.expired(100).map((e) => e.scope)).toEqual(["A"]);
    expect(cache.take("A", 100).hit).toBe(false);
  });
});

describe("--prompt-cache-gb: how many conversations a budget buys", () => {
  const base = { memoryGb: 16, modelBytes: 5 * GIB, perSequenceBytes: GIB };

  it("the default is a quarter of the memory the model leaves, in whole sequences beside the working one", () => {
    // (16 - 5) GiB / 4 = 2.75 GiB: two more sequences
    expect(cacheSequences(base)).toEqual({ sequences: 3, keeps: true });
  });

  it("0 turns it off; a budget below one sequence keeps the last conversation only; a large one is capped", () => {
    expect(cacheSequences({ ...base, gb: 0 })).toEqual({ sequences: 1, keeps: false });
    expect(cacheSequences({ ...base, gb: 0.5 })).toEqual({ sequences: 1, keeps: true });
    expect(cacheSequences({ ...base, gb: 2 })).toEqual({ sequences: 3, keeps: true });
    expect(cacheSequences({ ...base, gb: 1000 })).toEqual({ sequences: MAX_CACHED_CONVERSATIONS, keeps: true });
  });

  it("by default, a model that leaves no memory leaves no cache", () => {
    expect(cacheSequences({ ...base, memoryGb: 4 })).toEqual({ sequences: 1, keeps: false });
  });
});
