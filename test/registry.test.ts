// SPEC §8 "one sealed session at a time" and §2.4 busy/waiting, as the coordinator's registry keeps them:
// a FIFO queue per provider, exact counts, hang-ups leaving at once, and departures handed back.
import { describe, expect, it } from "vitest";
import { Registry, type AgentPort, type GatewayPort } from "../gateway/coordinator/registry.ts";
import type { ToAgent, ToGateway } from "../src/wire.ts";

const hex = (c: string) => c.repeat(64);
const sealed = { enc: "ZW5j", ct: "Y3Q=" };

function setup(ids: string[]) {
  const registry = new Registry(new Set(["qwen3-4b"]));
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

  it("a provider that leaves fails its running session and hands its queue back, unstarted", () => {
    const { registry, gateway, gatewayInbox, reserve } = setup([hex("a")]);
    for (const id of ["s_first001", "s_second01"]) {
      reserve(id, hex("a"));
      registry.request(gateway, id, sealed);
    }
    registry.remove(hex("a"), "gone");
    expect(gatewayInbox).toEqual([
      { t: "gone", id: "s_first001", started: true, reason: "gone" },
      { t: "gone", id: "s_second01", started: false, reason: "gone" },
    ]);
    expect(registry.entries()).toEqual([]);
  });

  it("keeps only catalog aliases from an advertisement", () => {
    const { registry, state } = setup([hex("a")]);
    expect(registry.advertise(hex("a"), ["qwen3-4b", "made-up"])).toEqual(["made-up"]);
    expect(state(hex("a")).model_ids).toEqual(["qwen3-4b"]);
  });
});
