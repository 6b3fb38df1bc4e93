// DESIGN §7 Fabric: what carries gateway↔coordinator messages. The LocalFabric, as a unit against a fake
// coordinator endpoint: objects handed over as they are (no JSON), in order, never inside the other side's call.
import { describe, expect, it, vi } from "vitest";
import { LocalFabric, type GatewayEndpoint } from "../../../../gateway/fabric/local.ts";
import type { FromGateway, ToGateway } from "../../../../src/wire/gateway.ts";

/** A coordinator that records what it receives and lets the test answer through the link's send. */
function fakeCoordinator() {
  const received: FromGateway[] = [];
  let reply: ((message: ToGateway) => void) | undefined;
  const closed = vi.fn();
  const coordinator = {
    openLocalLink(send: (message: ToGateway) => void): GatewayEndpoint {
      reply = send;
      return { receive: (message) => void received.push(message), close: closed };
    },
  };
  return { coordinator, received, closed, reply: (message: ToGateway) => reply!(message) };
}

const handlers = () => ({ open: vi.fn(), message: vi.fn(), closed: vi.fn() });

describe("DESIGN §7 LocalFabric: the embedded coordinator in-process", () => {
  it("opens at once, and hands messages over as the same objects, in order, on a later microtask", async () => {
    const fake = fakeCoordinator();
    const h = handlers();
    const link = new LocalFabric(fake.coordinator).connect(h);
    expect(link.connected).toBe(true);
    const place: FromGateway = { t: "place", id: "s_abcdefgh", provider: "a".repeat(64), alias: "qwen3-4b", floor: "process", exclude: [], enc: "ZW5j", ct: "Y3Q=" };
    expect(link.send(place)).toBe(true);
    expect(link.send({ t: "cancel", id: "s_abcdefgh" })).toBe(true);
    // nothing runs inside the sender's call
    expect(fake.received).toEqual([]);
    await Promise.resolve();
    expect(h.open).toHaveBeenCalledOnce();
    expect(fake.received[0]).toBe(place); // the object itself: no JSON between them
    expect(fake.received.map((m) => m.t)).toEqual(["place", "cancel"]);
    const listed: ToGateway = { t: "directory", reset: true, put: [], gone: [] };
    fake.reply(listed);
    expect(h.message).not.toHaveBeenCalled();
    await Promise.resolve();
    expect(h.message).toHaveBeenCalledWith(listed);
    expect(h.message.mock.calls[0]![0]).toBe(listed);
  });

  it("closing tells the coordinator the gateway is gone, and nothing more is carried either way", async () => {
    const fake = fakeCoordinator();
    const h = handlers();
    const link = new LocalFabric(fake.coordinator).connect(h);
    await link.close();
    expect(fake.closed).toHaveBeenCalledOnce();
    expect(h.closed).toHaveBeenCalledWith({ wasOpen: true });
    expect(link.connected).toBe(false);
    expect(link.send({ t: "attestation", rid: 2, id: "a".repeat(64) })).toBe(false);
    fake.reply({ t: "attestation", rid: 2, evidence: null });
    await Promise.resolve();
    expect(fake.received).toEqual([]);
    expect(h.message).not.toHaveBeenCalled();
  });

  it("a message sent before close but delivered after it is dropped, not handed to a closed coordinator link", async () => {
    const fake = fakeCoordinator();
    const link = new LocalFabric(fake.coordinator).connect(handlers());
    link.send({ t: "attestation", rid: 3, id: "a".repeat(64) });
    await link.close();
    await Promise.resolve();
    expect(fake.received).toEqual([]);
  });
});
