// docs/operator-guide.md "providers revoke": a connected agent whose enrollment is revoked is told within a pass
// of the watch, once; the others stay; a store that cannot be read disconnects no one. Driven by hand, no timer.
import { describe, expect, it } from "vitest";
import { EnrollmentWatch } from "../../../../gateway/coordinator/enrollment-watch.ts";

function setup(live: Set<string> | Error) {
  const errors: unknown[] = [];
  const watch = new EnrollmentWatch(() => (live instanceof Error ? Promise.reject(live) : Promise.resolve(live)), (err) => errors.push(err), 3_600_000);
  return { watch, errors };
}

describe("Links and secrets: a revoked provider is disconnected", () => {
  it("only the agents whose enrollment left the live set are told, each once", async () => {
    const live = new Set(["ptk_a", "ptk_b"]);
    const { watch } = setup(live);
    const told: string[] = [];
    watch.watch("ptk_a", () => told.push("a1"));
    watch.watch("ptk_a", () => told.push("a2")); // two machines on one token
    watch.watch("ptk_b", () => told.push("b"));
    await watch.check();
    expect(told).toEqual([]);
    live.delete("ptk_a");
    await watch.check();
    await watch.check();
    expect(told).toEqual(["a1", "a2"]);
    watch.stop();
  });

  it("an agent that left is no longer watched", async () => {
    const live = new Set(["ptk_a"]);
    const { watch } = setup(live);
    const told: string[] = [];
    const unwatch = watch.watch("ptk_a", () => told.push("a"));
    unwatch();
    live.clear();
    await watch.check();
    expect(told).toEqual([]);
    watch.stop();
  });

  it("a store that cannot be read reports the error and disconnects no one", async () => {
    const { watch, errors } = setup(new Error("disk gone"));
    const told: string[] = [];
    watch.watch("ptk_a", () => told.push("a"));
    await watch.check();
    expect(told).toEqual([]);
    expect(errors).toEqual([new Error("disk gone")]);
    watch.stop();
  });
});
