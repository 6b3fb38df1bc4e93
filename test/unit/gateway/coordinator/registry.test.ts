// SPEC §8 "one sealed session at a time" and §2.4 busy/waiting, as the coordinator's registry keeps them:
// a FIFO queue per provider, exact counts, hang-ups leaving at once, and departures handed back.
import { afterEach, describe, expect, it, vi } from "vitest";
import { Registry, type AgentPort, type GatewayPort, type QueueLimits } from "../../../../gateway/coordinator/registry.ts";
import type { ToGateway } from "../../../../src/wire/gateway.ts";
import { registryWith } from "../../../fixtures/registry-ports.ts";

const hex = (c: string) => c.repeat(64);
const sealed = { enc: "ZW5j", ct: "Y3Q=" };

function setup(ids: string[], limits: Partial<QueueLimits> = {}) {
  const { registry, agents, gateway, inbox: gatewayInbox } = registryWith(ids, limits);
  /** The gateway's placement of session `id` on `provider` (pinned to it with `pin`). */
  const place = (id: string, provider: string, pin?: string) =>
    registry.place(gateway, { t: "place", id, provider, alias: "qwen3-4b", floor: "process", ...(pin === undefined ? {} : { pin }), exclude: [], ...sealed });
  const state = (id: string) => registry.entries().find((e) => e.id === id)!;
  return { registry, agents, gateway, gatewayInbox, place, state };
}

describe("§8 One sealed session at a time per provider", () => {
  it("queues FIFO; busy and waiting are exact at every step", () => {
    const { registry, agents, gateway, place, state } = setup([hex("a")]);
    for (const id of ["s_first001", "s_second01", "s_third001"]) {
      place(id, hex("a"));
    }
    expect(state(hex("a"))).toMatchObject({ busy: true, waiting: 2 });
    const started = () => agents.get(hex("a"))!.filter((m) => m.t === "session").map((m) => (m as { id: string }).id);
    expect(started()).toEqual(["s_first001"]);
    registry.end(hex("a"), "s_first001", undefined);
    expect(state(hex("a"))).toMatchObject({ busy: true, waiting: 1 });
    registry.end(hex("a"), "s_second01", undefined);
    registry.end(hex("a"), "s_third001", undefined);
    expect(started()).toEqual(["s_first001", "s_second01", "s_third001"]);
    expect(state(hex("a"))).toMatchObject({ busy: false, waiting: 0 });
  });

  it("a caller who hangs up while queued leaves the queue at once; a running one stays busy until the agent stops", () => {
    const { registry, agents, gateway, place, state } = setup([hex("a")]);
    for (const id of ["s_first001", "s_second01"]) {
      place(id, hex("a"));
    }
    registry.cancel(gateway, "s_second01");
    expect(state(hex("a"))).toMatchObject({ busy: true, waiting: 0 });
    registry.cancel(gateway, "s_first001");
    expect(agents.get(hex("a"))!.at(-1)).toEqual({ t: "cancel", id: "s_first001" });
    expect(state(hex("a"))).toMatchObject({ busy: true });
    registry.end(hex("a"), "s_first001", undefined);
    expect(state(hex("a"))).toMatchObject({ busy: false, waiting: 0 });
  });

  it("the provider's link is told when it is given work and when it has none left, to watch it at the busy rate meanwhile", () => {
    const registry = new Registry(new Set(["qwen3-4b"]));
    const told: boolean[] = [];
    const port: AgentPort = { send: () => undefined, close: () => undefined, busy: (on) => told.push(on) };
    registry.add({ id: hex("a"), trust: "process", signingKey: hex("1"), sealingKey: hex("2"), evidence: hex("3") }, port);
    registry.advertise(hex("a"), ["qwen3-4b"]);
    const gateway: GatewayPort = { send: () => undefined };
    const place = (id: string) => registry.place(gateway, { t: "place", id, provider: hex("a"), alias: "qwen3-4b", floor: "process", exclude: [], ...sealed });
    expect(told).toEqual([]);
    place("s_first001");
    place("s_second01");
    expect(told).toEqual([true]);
    registry.end(hex("a"), "s_first001", undefined);
    expect(told).toEqual([true, true]); // the next in line started at once
    registry.end(hex("a"), "s_second01", undefined);
    expect(told).toEqual([true, true, false]);
  });

  it("a provider that leaves fails its running session and hands its queue back, unstarted", () => {
    const { registry, gateway, gatewayInbox, place } = setup([hex("a")]);
    for (const id of ["s_first001", "s_second01"]) {
      place(id, hex("a"));
    }
    registry.frame(hex("a"), "s_first001", "ZnJhbWU=");
    registry.remove(hex("a"), "gone");
    expect(gatewayInbox).toEqual([
      { t: "started", id: "s_first001" }, // its deadlines run from here (gateway/directory/deadlines.ts)
      { t: "frame", id: "s_first001", data: "ZnJhbWU=" },
      { t: "gone", id: "s_first001", started: true, reason: "gone" },
      { t: "gone", id: "s_second01", started: false, reason: "gone" },
    ]);
    expect(registry.entries()).toEqual([]);
  });

  it("a session's frames are relayed within the placement's max_bytes: the one that crosses it goes, then the provider is stopped and the rest dropped", () => {
    const { registry, gateway, gatewayInbox, agents } = setup([hex("a")]);
    registry.place(gateway, { t: "place", id: "s_first001", provider: hex("a"), alias: "qwen3-4b", floor: "process", exclude: [], ...sealed, max_bytes: 20 });
    const frame = "x".repeat(8);
    for (let i = 0; i < 5; i++) registry.frame(hex("a"), "s_first001", frame);
    // 8 and 16 bytes are within 20; the frame that makes 24 crosses it and still goes, so the gateway finds the breach
    expect(gatewayInbox.filter((m) => m.t === "frame")).toHaveLength(3);
    expect(agents.get(hex("a"))!.filter((m) => m.t === "cancel")).toEqual([{ t: "cancel", id: "s_first001" }]);
    expect(registry.entries()[0]).toMatchObject({ busy: true });
    registry.end(hex("a"), "s_first001", undefined);
    expect(registry.entries()[0]).toMatchObject({ busy: false });
  });

  it("a running session of which the gateway has seen no frame goes back unstarted, so it can run elsewhere", () => {
    const { registry, gatewayInbox, place, agents } = setup([hex("a")]);
    place("s_first001", hex("a"));
    expect(agents.get(hex("a"))!.map((m) => m.t)).toContain("session");
    registry.remove(hex("a"), "missed heartbeat");
    expect(gatewayInbox).toEqual([{ t: "started", id: "s_first001" }, { t: "gone", id: "s_first001", started: false, reason: "missed heartbeat" }]);
  });

  it("keeps only catalog aliases from an advertisement", () => {
    const { registry, state } = setup([hex("a")]);
    expect(registry.advertise(hex("a"), ["qwen3-4b", "made-up"])).toEqual(["made-up"]);
    expect(state(hex("a")).model_ids).toEqual(["qwen3-4b"]);
  });
});

describe("§4.1 Routing: a placement is taken only while the gateway's choice still holds", () => {
  it("an idle provider, or one no busier than any other, is taken; a busier one is stale while another is idle", () => {
    const { place, state } = setup([hex("a"), hex("b")]);
    expect(place("s_one00001", hex("a"))).toBe("placed");
    expect(place("s_two00001", hex("a"))).toBe("stale");
    expect(state(hex("a"))).toMatchObject({ busy: true, waiting: 0 });
    expect(place("s_two00001", hex("b"))).toBe("placed");
    // both busy: either may queue the next one
    expect(place("s_three001", hex("a"))).toBe("placed");
    expect(place("s_four0001", hex("b"))).toBe("placed");
    expect([state(hex("a")).waiting, state(hex("b")).waiting]).toEqual([1, 1]);
  });

  it("a provider that left, is leaving, does not serve the alias, is below the floor or excluded is stale", () => {
    const { registry, gateway, place } = setup([hex("a"), hex("b"), hex("c")]);
    const onto = (provider: string, over: object = {}) =>
      registry.place(gateway, { t: "place", id: `s_${provider.slice(0, 8)}`, provider, alias: "qwen3-4b", floor: "process", exclude: [], ...sealed, ...over });
    registry.remove(hex("a"), "gone");
    expect(place("s_gone0001", hex("a"))).toBe("stale");
    registry.leave(hex("b"));
    expect(place("s_leave001", hex("b"))).toBe("stale");
    expect(onto(hex("c"), { alias: "qwen3-8b" })).toBe("stale");
    expect(onto(hex("c"), { floor: "hardware" })).toBe("stale");
    expect(onto(hex("c"), { exclude: [hex("c")] })).toBe("stale");
    expect(registry.totals.staleChoices).toBe(5);
    expect(onto(hex("c"))).toBe("placed");
  });

  it("a pinned placement takes the pinned provider even when busy; a pin it cannot serve is the SPEC's 503", () => {
    const { registry, place, state } = setup([hex("a"), hex("b")]);
    expect(place("s_one00001", hex("a"), hex("a"))).toBe("placed");
    expect(place("s_two00001", hex("a"), hex("a").slice(0, 8))).toBe("placed");
    expect(state(hex("a"))).toMatchObject({ busy: true, waiting: 1 });
    // a pin whose provider is not the one placed on: the copy was behind
    expect(place("s_three001", hex("b"), hex("a"))).toBe("stale");
    registry.remove(hex("a"), "gone");
    expect(() => place("s_four0001", hex("a"), hex("a"))).toThrow(/Provider a{64} is not online/);
  });

  it("a session id already in use is refused", () => {
    const { place } = setup([hex("a")]);
    place("s_one00001", hex("a"));
    expect(() => place("s_one00001", hex("a"))).toThrow(/already in use/);
  });
});

describe("Admission control: queues are bounded", () => {
  afterEach(() => vi.useRealTimers());
  const rejected = (inbox: ToGateway[]) => inbox.filter((m) => m.t === "rejected");

  it("a full provider queue answers 503 overloaded with Retry-After from the observed service time", () => {
    vi.useFakeTimers();
    const { registry, place } = setup([hex("a")], { queuePerProvider: 2 });
    place("s_first001", hex("a"));
    vi.advanceTimersByTime(3_000); // the session takes 3 s
    registry.end(hex("a"), "s_first001", undefined);
    for (const id of ["s_run00001", "s_wait0001", "s_wait0002"]) place(id, hex("a"));
    let error: { code?: string; status?: number; retryAfterS?: number } = {};
    try {
      place("s_over0001", hex("a"));
    } catch (err) {
      error = err as typeof error;
    }
    expect(error).toMatchObject({ code: "overloaded", status: 503, retryAfterS: 3 });
    expect(registry.totals.overloaded).toBe(1);
  });

  it("the total queued per alias is capped over all providers", () => {
    const { place } = setup([hex("a"), hex("b")], { queuePerAlias: 3 });
    // two run, then three wait; the cap counts waiting sessions, so a sixth does not fit
    for (const [id, p] of [["s_one00001", "a"], ["s_two00001", "b"], ["s_three001", "a"], ["s_four0001", "b"], ["s_five0001", "a"]] as const) {
      expect(place(id, hex(p))).toBe("placed");
    }
    expect(() => place("s_six00001", hex("b"))).toThrow(/at capacity: 3 requests are already waiting for qwen3-4b/);
  });

  it("a session queued longer than the longest wait leaves with 503 overloaded; the one running is untouched", () => {
    vi.useFakeTimers();
    const { gatewayInbox, place, state } = setup([hex("a")], { queuedMs: 10_000 });
    for (const id of ["s_run00001", "s_wait0001"]) place(id, hex("a"));
    vi.advanceTimersByTime(10_000);
    expect(rejected(gatewayInbox).map((m) => m.id)).toEqual(["s_wait0001"]);
    expect(state(hex("a"))).toMatchObject({ busy: true, waiting: 0 });
  });
});

describe("DESIGN §7 The gateways' copies: the whole directory on link, then what changed, once a turn", () => {
  it("a gateway linking gets every provider that takes sessions; changes in one turn arrive as one delta", async () => {
    const { registry, place } = setup([hex("a"), hex("b")]);
    const inbox: ToGateway[] = [];
    const port = { send: (m: ToGateway) => inbox.push(m) };
    registry.feed.subscribe(port);
    // the first part carries the queue caps, so the gateway can refuse before any costly work what only a full queue could take
    expect(inbox).toEqual([{ t: "directory", reset: true, queue: { per_provider: 32 }, put: [expect.objectContaining({ id: hex("a"), busy: false }), expect.objectContaining({ id: hex("b") })], gone: [] }]);
    place("s_one00001", hex("a"));
    place("s_two00001", hex("b"));
    place("s_three001", hex("a"));
    registry.leave(hex("b"));
    expect(inbox).toHaveLength(1);
    await Promise.resolve();
    expect(inbox.slice(1)).toEqual([{ t: "directory", put: [expect.objectContaining({ id: hex("a"), busy: true, waiting: 1, last_assigned: expect.any(Number) })], gone: [hex("b")] }]);
    registry.feed.unsubscribe(port);
    registry.end(hex("a"), "s_one00001", undefined);
    await Promise.resolve();
    expect(inbox).toHaveLength(2);
  });

  it("the whole directory of 2,500 providers goes in parts of 1,000, all but the last saying more", () => {
    const ids = Array.from({ length: 2_500 }, (_, i) => i.toString(16).padStart(64, "0"));
    const { registry } = setup(ids);
    const inbox: ToGateway[] = [];
    registry.feed.subscribe({ send: (m) => inbox.push(m) });
    const parts = inbox.map((m) => (m.t === "directory" ? [m.reset ?? false, m.more ?? false, m.put.length] : m.t));
    expect(parts).toEqual([[true, true, 1_000], [false, true, 1_000], [false, false, 500]]);
    expect(new Set(inbox.flatMap((m) => (m.t === "directory" ? m.put.map((e) => e.id) : []))).size).toBe(2_500);
  });
});
