// DESIGN §7, a gateway's copy of the directory: what the coordinator's deltas say, and its own choices counted
// until the coordinator counts them, so concurrent requests at one gateway spread as SPEC §4.1 spreads them.
import { afterEach, describe, expect, it, vi } from "vitest";
import { DirectoryCopy } from "../../../../gateway/directory/directory-copy.ts";
import { fakeCoordinatorClient, fakeProviders } from "../../../fixtures/fake-coordinator.ts";
import type { DirectoryEntry } from "../../../../src/wire/gateway.ts";

const hex = (c: string) => c.repeat(64);
const entry = (c: string, over: Partial<DirectoryEntry> = {}): DirectoryEntry => ({
  id: hex(c), model_ids: ["qwen3-4b"], trust: "process", busy: false, waiting: 0, signing_key: hex("1"), sealing_key: hex("2"), last_assigned: 0, evidence_sha256: hex("3"), ...over,
});
const request = { alias: "qwen3-4b", floor: "process" as const };

describe("DESIGN §7 A gateway's copy of the directory", () => {
  it("is not ready until the whole directory arrives, and lists it without the keys, naming each provider's evidence by its digest", () => {
    const copy = new DirectoryCopy();
    expect(copy.ready).toBe(false);
    copy.apply({ reset: true, put: [entry("a", { busy: true, waiting: 2 })], gone: [] });
    expect(copy.ready).toBe(true);
    expect(copy.list()).toEqual([{ id: hex("a"), model_ids: ["qwen3-4b"], trust: "process", busy: true, waiting: 2, evidence_sha256: hex("3") }]);
  });

  it("a whole directory in parts is ready only with its last part", () => {
    const copy = new DirectoryCopy();
    copy.apply({ reset: true, more: true, put: [entry("a")], gone: [] });
    expect(copy.ready).toBe(false);
    copy.apply({ put: [entry("b")], gone: [] });
    expect([copy.ready, copy.list().length]).toEqual([true, 2]);
  });

  it("concurrent choices spread over idle providers: each counts on its provider until settled", () => {
    const copy = new DirectoryCopy();
    copy.apply({ reset: true, put: [entry("a"), entry("b"), entry("c")], gone: [] });
    const chosen = ["s_one00001", "s_two00001", "s_three001"].map((s) => copy.choose(s, request, []).id);
    expect(new Set(chosen)).toEqual(new Set([hex("a"), hex("b"), hex("c")]));
    // the fourth goes behind one of them; a settled choice no longer counts
    copy.settle("s_two00001");
    expect(copy.choose("s_four0001", request, []).id).toBe(chosen[1]);
  });

  it("the coordinator's delta naming a placement stops the copy counting it, as its entry now does", () => {
    const copy = new DirectoryCopy();
    copy.apply({ reset: true, put: [entry("a", { last_assigned: 5 }), entry("b", { last_assigned: 9 })], gone: [] });
    expect(copy.choose("s_one00001", request, []).id).toBe(hex("a"));
    copy.apply({ put: [entry("a", { busy: true, last_assigned: 10 }), entry("b", { busy: true, waiting: 1 })], gone: [], placed: ["s_one00001"] });
    // a carries 1 and b 2: were the placement still counted on top of a's busy, the two would tie and b,
    // used longer ago, would be chosen
    expect(copy.choose("s_two00001", request, []).id).toBe(hex("a"));
  });

  it("admission reads the copy: 503 overloaded once even the least loaded provider's queue is at the coordinator's cap, counting nothing", () => {
    const copy = new DirectoryCopy();
    copy.apply({ reset: true, queue: { per_provider: 2 }, put: [entry("a", { busy: true, waiting: 2 }), entry("b", { busy: true, waiting: 1 })], gone: [] });
    copy.admit(request, []);
    // the copy's own placement on b fills its queue too
    expect(copy.choose("s_one00001", request, []).id).toBe(hex("b"));
    expect(() => copy.admit(request, [])).toThrow(expect.objectContaining({ code: "overloaded", status: 503, retryAfterS: 1 }));
    copy.settle("s_one00001");
    copy.admit(request, []);
    // a pin reads its own machine's queue
    expect(() => copy.admit({ ...request, pin: hex("a") }, [])).toThrow(/provider a{64} already has 2 requests waiting/);
    // a coordinator that did not say its caps leaves admission to placement
    copy.apply({ reset: true, put: [entry("a", { busy: true, waiting: 99 })], gone: [] });
    copy.admit(request, []);
  });

  it("gone providers leave routing and the listing; a reset replaces everything; a pin it cannot serve is the SPEC's 503", () => {
    const copy = new DirectoryCopy();
    copy.apply({ reset: true, put: [entry("a"), entry("b")], gone: [] });
    copy.apply({ put: [], gone: [hex("a")] });
    expect(copy.list().map((p) => p.id)).toEqual([hex("b")]);
    expect(() => copy.choose("s_one00001", { ...request, pin: hex("a") }, [])).toThrow(/Provider a{64} is not online/);
    copy.apply({ reset: true, put: [entry("c")], gone: [] });
    expect(copy.list().map((p) => p.id)).toEqual([hex("c")]);
    copy.clear();
    expect([copy.ready, copy.list()]).toEqual([false, []]);
    expect(() => copy.choose("s_two00001", request, [])).toThrow(/No provider at or above the process rung serves qwen3-4b/);
  });
});

describe("§4.1 Affinity: a conversation goes back to the provider that last served it, when that one is idle", () => {
  afterEach(() => vi.useRealTimers());
  const twoIdle = (copy: DirectoryCopy) => copy.apply({ reset: true, put: [entry("a"), entry("b")], gone: [] });

  it("an idle provider that took this key before takes it again, where least-recently-used would spread it", () => {
    const copy = new DirectoryCopy();
    twoIdle(copy);
    const first = copy.choose("s_one00001", { ...request, affinity: "k1" }, []).id;
    copy.settle("s_one00001");
    expect(copy.choose("s_two00001", { ...request, affinity: "k1" }, []).id).toBe(first);
    copy.settle("s_two00001");
    // another key, or none, spreads as before: to the provider used least recently
    const other = first === hex("a") ? hex("b") : hex("a");
    expect(copy.choose("s_three001", { ...request, affinity: "k2" }, []).id).toBe(other);
  });

  it("a placement another gateway made (remember) is preferred as this gateway's own would be", () => {
    const copy = new DirectoryCopy();
    twoIdle(copy);
    // least-recently-used alone sends a fresh key to a (both never used, a joined first)
    copy.remember("k1", hex("b"));
    expect(copy.choose("s_one00001", { ...request, affinity: "k1" }, []).id).toBe(hex("b"));
    copy.settle("s_one00001");
    expect(copy.choose("s_two00001", { ...request, affinity: "k2" }, []).id).toBe(hex("a"));
  });

  it("a busy affine provider is passed over at once, and the key follows the request to where it went", () => {
    const copy = new DirectoryCopy();
    twoIdle(copy);
    const first = copy.choose("s_one00001", { ...request, affinity: "k1" }, []).id;
    // still running there (counted until settled): the next turn goes to the idle one
    const second = copy.choose("s_two00001", { ...request, affinity: "k1" }, []).id;
    expect(second).not.toBe(first);
    copy.settle("s_one00001");
    copy.settle("s_two00001");
    expect(copy.choose("s_three001", { ...request, affinity: "k1" }, []).id).toBe(second);
  });

  it("never overrides a pin, an exclusion or the floor, and a pinned placement is not remembered", () => {
    const copy = new DirectoryCopy();
    copy.apply({ reset: true, put: [entry("a"), entry("b", { trust: "hardware", last_assigned: 5 })], gone: [] });
    expect(copy.choose("s_one00001", { ...request, affinity: "k1" }, []).id).toBe(hex("a"));
    copy.settle("s_one00001");
    expect(copy.choose("s_two00001", { ...request, affinity: "k1", pin: hex("b") }, []).id).toBe(hex("b"));
    copy.settle("s_two00001");
    expect(copy.choose("s_three001", { ...request, affinity: "k1" }, [hex("a")]).id).toBe(hex("b"));
    copy.settle("s_three001");
    expect(copy.choose("s_four0001", { ...request, floor: "hardware", affinity: "k1" }, []).id).toBe(hex("b"));
    copy.settle("s_four0001");
    // the last unpinned choice for k1 was b
    expect(copy.choose("s_five0001", { ...request, affinity: "k1" }, []).id).toBe(hex("b"));
  });

  it("a key is forgotten after its TTL, and the least recently used key goes first past the bound", () => {
    vi.useFakeTimers();
    const copy = new DirectoryCopy({ maxKeys: 2, ttlMs: 60_000, now: () => Date.now() });
    twoIdle(copy);
    const place = (session: string, affinity: string) => {
      vi.advanceTimersByTime(1); // distinct assignment times, so least-recently-used is never a tie
      const id = copy.choose(session, { ...request, affinity }, []).id;
      copy.settle(session);
      return id;
    };
    // k1 on a; k2 spreads to b (least recently used); k1 again stays on a
    expect([place("s_00000001", "k1"), place("s_00000002", "k2"), place("s_00000003", "k1")]).toEqual([hex("a"), hex("b"), hex("a")]);
    // k3 pushes out k2, the least recently used key: k2 then goes where least-recently-used sends it (b)
    expect(place("s_00000004", "k3")).toBe(hex("b"));
    expect(place("s_00000005", "k1")).toBe(hex("a"));
    expect(place("s_00000006", "k2")).toBe(hex("b"));
    // k1 now sits on a, which is also the one used least recently; after the TTL it is simply that again
    vi.advanceTimersByTime(60_000);
    expect(place("s_00000007", "k2")).toBe(hex("a"));
  });
});

describe("DESIGN §7 The gateway's coordinator client and its copy", () => {
  it("a listing asked for before the whole directory arrived waits for it and its providers' checks, and answers from it", async () => {
    // two providers with real evidence, which the fake coordinator hands over when the gateway asks (DESIGN §11)
    const providers = await fakeProviders(2, entry("0"));
    const { client, deliver } = fakeCoordinatorClient(providers);
    const listing = client.list();
    deliver({ t: "directory", reset: true, more: true, put: [providers[0]!.entry()], gone: [] });
    deliver({ t: "directory", put: [providers[1]!.entry({ busy: true })], gone: [] });
    expect((await listing).map((p) => [p.id, p.busy])).toEqual([[providers[0]!.id, false], [providers[1]!.id, true]]);
  });
});
