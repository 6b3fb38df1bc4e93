// SPEC §8 "one sealed session at a time" and §2.4 busy/waiting, as the coordinator's registry keeps them:
// a FIFO queue per provider, exact counts, hang-ups leaving at once, and departures handed back.
import { afterEach, describe, expect, it, vi } from "vitest";
import { Registry, type AgentPort, type GatewayPort, type QueueLimits } from "../gateway/coordinator/registry.ts";
import type { ToAgent, ToGateway } from "../src/wire.ts";

const hex = (c: string) => c.repeat(64);
const sealed = { enc: "ZW5j", ct: "Y3Q=" };

function setup(ids: string[], limits: Partial<QueueLimits> = {}) {
  const registry = new Registry(new Set(["qwen3-4b"]), limits);
  const agents = new Map<string, ToAgent[]>();
  for (const id of ids) {
    const sent: ToAgent[] = [];
    const port: AgentPort = { send: (m) => sent.push(m), close: () => undefined };
    registry.add({ id, trust: "process", signingKey: hex("1"), sealingKey: hex("2") }, port);
    registry.advertise(id, ["qwen3-4b"]);
    agents.set(id, sent);
  }
  const gatewayInbox: ToGateway[] = [];
  const gateway: GatewayPort = { send: (m) => gatewayInbox.push(m) };
  const reserve = (id: string, pin?: string) => registry.reserve(gateway, { t: "reserve", id, alias: "qwen3-4b", floor: "process", pin, exclude: [] });
  const state = (id: string) => registry.entries().find((e) => e.id === id)!;
  return { registry, agents, gateway, gatewayInbox, reserve, state };
}

describe("§8 One sealed session at a time per provider", () => {
  it("queues FIFO; busy and waiting are exact at every step", () => {
    const { registry, agents, gateway, reserve, state } = setup([hex("a")]);
    for (const id of ["s_first001", "s_second01", "s_third001"]) {
      reserve(id, hex("a"));
      registry.request(gateway, id, sealed);
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
    const { registry, agents, gateway, reserve, state } = setup([hex("a")]);
    for (const id of ["s_first001", "s_second01"]) {
      reserve(id, hex("a"));
      registry.request(gateway, id, sealed);
    }
    registry.cancel(gateway, "s_second01");
    expect(state(hex("a"))).toMatchObject({ busy: true, waiting: 0 });
    registry.cancel(gateway, "s_first001");
    expect(agents.get(hex("a"))!.at(-1)).toEqual({ t: "cancel", id: "s_first001" });
    expect(state(hex("a"))).toMatchObject({ busy: true });
    registry.end(hex("a"), "s_first001", undefined);
    expect(state(hex("a"))).toMatchObject({ busy: false, waiting: 0 });
  });

  it("N idle providers given N concurrent requests take one each", () => {
    const ids = [hex("a"), hex("b"), hex("c")];
    const { reserve } = setup(ids);
    const chosen = ["s_one00001", "s_two00001", "s_three001"].map((id) => reserve(id).id);
    expect(new Set(chosen)).toEqual(new Set(ids));
  });

  it("the provider's link is told when it is given work and when it has none left, to watch it at the busy rate meanwhile", () => {
    const registry = new Registry(new Set(["qwen3-4b"]));
    const told: boolean[] = [];
    const port: AgentPort = { send: () => undefined, close: () => undefined, busy: (on) => told.push(on) };
    registry.add({ id: hex("a"), trust: "process", signingKey: hex("1"), sealingKey: hex("2") }, port);
    registry.advertise(hex("a"), ["qwen3-4b"]);
    const gateway: GatewayPort = { send: () => undefined };
    const reserve = (id: string) => registry.reserve(gateway, { t: "reserve", id, alias: "qwen3-4b", floor: "process", exclude: [] });
    reserve("s_first001");
    expect(told).toEqual([]); // reserved, its sealed request not here: nothing runs yet
    registry.request(gateway, "s_first001", sealed);
    reserve("s_second01");
    registry.request(gateway, "s_second01", sealed);
    expect(told).toEqual([true]);
    registry.end(hex("a"), "s_first001", undefined);
    expect(told).toEqual([true, true]); // the next in line started at once
    registry.end(hex("a"), "s_second01", undefined);
    expect(told).toEqual([true, true, false]);
  });

  it("a provider that leaves fails its running session and hands its queue back, unstarted", () => {
    const { registry, gateway, gatewayInbox, reserve } = setup([hex("a")]);
    for (const id of ["s_first001", "s_second01"]) {
      reserve(id, hex("a"));
      registry.request(gateway, id, sealed);
    }
    registry.frame(hex("a"), "s_first001", "ZnJhbWU=");
    registry.remove(hex("a"), "gone");
    expect(gatewayInbox).toEqual([
      { t: "frame", id: "s_first001", data: "ZnJhbWU=" },
      { t: "gone", id: "s_first001", started: true, reason: "gone" },
      { t: "gone", id: "s_second01", started: false, reason: "gone" },
    ]);
    expect(registry.entries()).toEqual([]);
  });

  it("a running session of which the gateway has seen no frame goes back unstarted, so it can run elsewhere", () => {
    const { registry, gateway, gatewayInbox, reserve, agents } = setup([hex("a")]);
    reserve("s_first001", hex("a"));
    registry.request(gateway, "s_first001", sealed);
    expect(agents.get(hex("a"))!.map((m) => m.t)).toContain("session");
    registry.remove(hex("a"), "missed heartbeat");
    expect(gatewayInbox).toEqual([{ t: "gone", id: "s_first001", started: false, reason: "missed heartbeat" }]);
  });

  it("keeps only catalog aliases from an advertisement", () => {
    const { registry, state } = setup([hex("a")]);
    expect(registry.advertise(hex("a"), ["qwen3-4b", "made-up"])).toEqual(["made-up"]);
    expect(state(hex("a")).model_ids).toEqual(["qwen3-4b"]);
  });
});

describe("Admission control: reservations cannot wedge a queue, and queues are bounded", () => {
  afterEach(() => vi.useRealTimers());
  const rejected = (inbox: ToGateway[]) => inbox.filter((m) => m.t === "rejected");

  it("a reservation whose sealed request never arrives is dropped after 5 s, and the next in line runs", () => {
    vi.useFakeTimers();
    const { registry, agents, gateway, gatewayInbox, reserve, state } = setup([hex("a")]);
    reserve("s_silent01", hex("a")); // never followed by its request
    reserve("s_honest01", hex("a"));
    registry.request(gateway, "s_honest01", sealed);
    expect(state(hex("a"))).toMatchObject({ busy: false, waiting: 2 });
    vi.advanceTimersByTime(4_999);
    expect(agents.get(hex("a"))!.filter((m) => m.t === "session")).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(rejected(gatewayInbox)).toEqual([{ t: "rejected", id: "s_silent01", error: expect.objectContaining({ code: "overloaded" }) }]);
    expect(agents.get(hex("a"))!.filter((m) => m.t === "session").map((m) => (m as { id: string }).id)).toEqual(["s_honest01"]);
    expect(state(hex("a"))).toMatchObject({ busy: true, waiting: 0 });
    expect(registry.totals.reservationsDropped).toBe(1);
  });

  it("one link holds at most 64 reservations awaiting their requests: 20,000 reserves queue 64", () => {
    const { registry, gateway, reserve, state } = setup([hex("a")], { queuePerProvider: 100_000, queuePerAlias: 100_000 });
    let refused = 0;
    for (let i = 0; i < 20_000; i++) {
      try {
        reserve(`s_flood${String(i).padStart(5, "0")}`, hex("a"));
      } catch (err) {
        expect((err as { code: string }).code).toBe("overloaded");
        refused++;
      }
    }
    expect(refused).toBe(20_000 - 64);
    expect(state(hex("a")).waiting).toBe(64);
    // a request arriving frees its reservation's place on the link
    registry.request(gateway, "s_flood00000", sealed);
    expect(() => reserve("s_another1", hex("a"))).not.toThrow();
  });

  it("a full provider queue answers 503 overloaded with Retry-After from the observed service time", () => {
    vi.useFakeTimers();
    const { registry, gateway, reserve } = setup([hex("a")], { queuePerProvider: 2 });
    reserve("s_first001", hex("a"));
    registry.request(gateway, "s_first001", sealed);
    vi.advanceTimersByTime(3_000); // the session takes 3 s
    registry.end(hex("a"), "s_first001", undefined);
    for (const id of ["s_run00001", "s_wait0001", "s_wait0002"]) {
      reserve(id, hex("a"));
      registry.request(gateway, id, sealed);
    }
    let error: { code?: string; status?: number; retryAfterS?: number } = {};
    try {
      reserve("s_over0001", hex("a"));
    } catch (err) {
      error = err as typeof error;
    }
    expect(error).toMatchObject({ code: "overloaded", status: 503, retryAfterS: 3 });
    expect(registry.totals.overloaded).toBe(1);
  });

  it("the total queued per alias is capped over all providers", () => {
    const { registry, gateway, reserve } = setup([hex("a"), hex("b")], { queuePerAlias: 3 });
    for (const id of ["s_one00001", "s_two00001", "s_three001"]) {
      reserve(id);
      registry.request(gateway, id, sealed);
    }
    // two run, one waits; the cap counts waiting sessions, so two more fit and the third does not
    reserve("s_four0001");
    reserve("s_five0001");
    expect(() => reserve("s_six00001")).toThrow(/at capacity: 3 requests are already waiting for qwen3-4b/);
  });

  it("a session queued longer than the longest wait leaves with 503 overloaded; the one running is untouched", () => {
    vi.useFakeTimers();
    const { registry, gateway, gatewayInbox, reserve, state } = setup([hex("a")], { queuedMs: 10_000 });
    for (const id of ["s_run00001", "s_wait0001"]) {
      reserve(id, hex("a"));
      registry.request(gateway, id, sealed);
    }
    vi.advanceTimersByTime(10_000);
    expect(rejected(gatewayInbox).map((m) => m.id)).toEqual(["s_wait0001"]);
    expect(state(hex("a"))).toMatchObject({ busy: true, waiting: 0 });
  });
});
