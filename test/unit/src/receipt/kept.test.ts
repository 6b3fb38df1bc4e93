// The kept values behind sealing and receipt checks (src/receipt/kept.ts): one import (or hash) per key, bounded.
import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { describe, expect, it } from "vitest";
import { Kept } from "../../../../src/receipt/kept.ts";

describe("Performance: a provider's key is imported once, and the cache stays bounded", () => {
  const loaded: string[] = [];
  const key = generateKeyPairSync("ed25519").publicKey;
  const cache = new Kept(2, (text): KeyObject => (loaded.push(text), key));

  it("imports a key on first use only", () => {
    expect(cache.get("a")).toBe(key);
    expect(cache.get("a")).toBe(key);
    expect(loaded).toEqual(["a"]);
  });

  it("past its size the oldest key goes and is imported again when asked for", () => {
    cache.get("b");
    cache.get("c");
    cache.get("b");
    cache.get("a");
    expect(loaded).toEqual(["a", "b", "c", "a"]);
  });

  it("a key that fails to import is not kept: the next use tries again", () => {
    let tries = 0;
    const flaky = new Kept(2, (): KeyObject => {
      if (++tries === 1) throw new Error("not a point on the curve");
      return key;
    });
    expect(() => flaky.get("x")).toThrow("not a point on the curve");
    expect(flaky.get("x")).toBe(key);
    expect(tries).toBe(2);
  });
});
