// DESIGN §7 NatsFabric's directory: every coordinator's feed merged into one copy, keyed by coordinator. A unit
// against a recording sink: snapshots replace one coordinator's part, deltas apply in order, a skipped number asks
// again, and a coordinator forgotten takes only its own providers with it.
import { describe, expect, it } from "vitest";
import { CoordinatorFeeds } from "../../../../gateway/fabric/nats-feeds.ts";
import type { DirectoryEntry, ToGateway } from "../../../../src/wire/gateway.ts";

type Directory = Extract<ToGateway, { t: "directory" }>;

const entry = (id: string): DirectoryEntry => ({
  id, model_ids: ["qwen3-4b"], trust: "process", busy: false, waiting: 0, last_assigned: 0, signing_key: "k", sealing_key: "k", evidence_sha256: "e".repeat(64),
});
const delta = (put: string[], gone: string[] = []): Directory => ({ t: "directory", put: put.map(entry), gone });

function feeds() {
  const emitted: Directory[] = [];
  const asked: string[] = [];
  const merged = new CoordinatorFeeds({ emit: (m) => void emitted.push(m), ask: (c) => void asked.push(c) });
  return { merged, emitted, asked };
}

describe("DESIGN §7 NatsFabric: directory feeds merged per coordinator", () => {
  it("asks a coordinator it has not heard of for its snapshot, and applies its deltas only after it", () => {
    const { merged, emitted, asked } = feeds();
    merged.feed("c1", 3, delta(["p1"]), 0);
    expect(asked).toEqual(["c1"]);
    expect(emitted).toEqual([]);
    merged.snapshot("c1", 3, { ...delta(["p1", "p2"]), reset: true }, 0);
    merged.feed("c1", 3, delta(["p1"]), 0); // already in the snapshot
    merged.feed("c1", 4, delta([], ["p2"]), 0);
    expect(emitted).toEqual([{ t: "directory", put: [entry("p1"), entry("p2")], gone: [] }, { t: "directory", put: [], gone: ["p2"] }]);
    expect(merged.ownerOf("p1")).toBe("c1");
  });

  it("a snapshot in parts lands whole, and drops what that coordinator no longer holds", () => {
    const { merged, emitted } = feeds();
    merged.snapshot("c1", 1, { ...delta(["p1", "p2"]), reset: true }, 0);
    merged.snapshot("c1", 5, { ...delta(["p3"]), reset: true, more: true }, 0);
    expect(emitted).toHaveLength(1);
    merged.snapshot("c1", 5, delta(["p1"]), 0);
    expect(emitted[1]).toEqual({ t: "directory", put: [entry("p3"), entry("p1")], gone: ["p2"] });
  });

  it("a skipped sequence number, or a beat ahead of the copy, asks for the snapshot again", () => {
    const { merged, asked } = feeds();
    merged.snapshot("c1", 1, { ...delta([]), reset: true }, 0);
    merged.feed("c1", 3, delta(["p1"]), 0);
    expect(asked).toEqual(["c1"]);
    merged.snapshot("c1", 3, { ...delta(["p1"]), reset: true }, 0);
    merged.feed("c1", 4, undefined, 0);
    expect(asked).toEqual(["c1", "c1"]);
  });

  it("a provider that moved keeps its new coordinator when the old one says it is gone", () => {
    const { merged, emitted } = feeds();
    merged.snapshot("c1", 1, { ...delta(["p1"]), reset: true }, 0);
    merged.snapshot("c2", 1, { ...delta(["p1"]), reset: true }, 0);
    merged.feed("c1", 2, delta([], ["p1"]), 0);
    expect(emitted).toHaveLength(2);
    expect(merged.ownerOf("p1")).toBe("c2");
  });

  it("a quiet coordinator is forgotten with its own providers only", () => {
    const { merged, emitted } = feeds();
    merged.snapshot("c1", 1, { ...delta(["p1"]), reset: true }, 0);
    merged.snapshot("c2", 1, { ...delta(["p2"]), reset: true }, 5_000);
    expect(merged.quiet(7_000, 6_000)).toEqual(["c1"]);
    expect(emitted.at(-1)).toEqual({ t: "directory", put: [], gone: ["p1"] });
    expect(merged.coordinators()).toEqual(["c2"]);
  });
});
