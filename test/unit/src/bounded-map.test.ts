// src/bounded-map.ts: the one bounded map of the gateway's per-provider, per-address and per-key tables and the
// agent's grammar cache (DESIGN §8: a stranger's keys cannot grow memory without bound).
import { describe, expect, it } from "vitest";
import { BoundedMap } from "../../../src/bounded-map.ts";

describe("BoundedMap", () => {
  it("keeps at most its limit, forgetting the oldest write first", () => {
    const map = new BoundedMap<string, number>(3);
    for (const [i, key] of ["a", "b", "c", "d", "e"].entries()) map.set(key, i);
    expect([...map]).toEqual([["c", 2], ["d", 3], ["e", 4]]);
  });

  it("a write to a kept key makes it the newest, so it outlives keys written after it first", () => {
    const map = new BoundedMap<string, number>(3);
    map.set("a", 1).set("b", 2).set("c", 3).set("a", 10).set("d", 4);
    expect([...map.keys()]).toEqual(["c", "a", "d"]);
    expect(map.get("a")).toBe(10);
  });

  it("touch reads a key and makes it the newest; a read with get does not", () => {
    const map = new BoundedMap<string, number>(2);
    map.set("a", 1).set("b", 2);
    expect(map.get("a")).toBe(1);
    expect(map.touch("a")).toBe(1);
    map.set("c", 3);
    expect([...map.keys()]).toEqual(["a", "c"]);
    expect(map.touch("b")).toBeUndefined();
    expect(map.size).toBe(2);
  });

  it("10,000 distinct keys through a map of 100 leave 100, the last written", () => {
    const map = new BoundedMap<number, number>(100);
    for (let i = 0; i < 10_000; i++) map.set(i, i);
    expect(map.size).toBe(100);
    expect([...map.keys()][0]).toBe(9_900);
  });
});
