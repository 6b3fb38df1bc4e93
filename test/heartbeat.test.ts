// Link liveness (docs/architecture.md "Faults"): traffic proves a peer alive, a quiet one is pinged, and only several
// intervals of silence drop it, so a loaded machine's late pong never drops a live agent.
import { EventEmitter } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { WebSocket } from "ws";
import { deadPeerBoundMs, keepAlive, SILENT_INTERVALS_ALLOWED } from "../src/heartbeat.ts";

const INTERVAL = 2_000;

class FakeSocket extends EventEmitter {
  readyState: number = WebSocket.OPEN;
  pings = 0;
  ping(): void {
    this.pings++;
  }
}

function watch(socket: FakeSocket) {
  const dead = vi.fn();
  const stop = keepAlive(socket as unknown as WebSocket, INTERVAL, dead, () => 0.5);
  return { dead, stop };
}

beforeEach(() => vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setImmediate", "clearImmediate", "performance"] }));
afterEach(() => vi.useRealTimers());

describe("Faults: link liveness", () => {
  it("a link that carries traffic is never pinged and never dropped", () => {
    const socket = new FakeSocket();
    const { dead, stop } = watch(socket);
    for (let t = 0; t < 60_000; t += 500) {
      vi.advanceTimersByTime(500);
      socket.emit("message", "{}");
    }
    expect(socket.pings).toBe(0);
    expect(dead).not.toHaveBeenCalled();
    stop();
  });

  it("a peer that pings us is alive: this end sends no pings of its own, and never drops it", () => {
    const socket = new FakeSocket();
    const { dead, stop } = watch(socket);
    for (let t = 0; t < 60_000; t += 1_500) {
      vi.advanceTimersByTime(1_500);
      socket.emit("ping");
    }
    expect(socket.pings).toBe(0);
    expect(dead).not.toHaveBeenCalled();
    stop();
  });

  it("a quiet peer that answers its pings stays, even when each pong comes an interval late", () => {
    const socket = new FakeSocket();
    socket.ping = function (this: FakeSocket) {
      this.pings++;
      setTimeout(() => this.emit("pong"), INTERVAL);
    };
    const { dead, stop } = watch(socket);
    vi.advanceTimersByTime(120_000);
    expect(socket.pings).toBeGreaterThan(10);
    expect(dead).not.toHaveBeenCalled();
    stop();
  });

  it(`a silent peer is pinged, then dropped after ${SILENT_INTERVALS_ALLOWED} silent intervals and within the bound`, () => {
    const socket = new FakeSocket();
    const { dead } = watch(socket);
    vi.advanceTimersByTime(SILENT_INTERVALS_ALLOWED * INTERVAL - 1);
    expect(dead).not.toHaveBeenCalled();
    expect(socket.pings).toBeGreaterThanOrEqual(SILENT_INTERVALS_ALLOWED - 1);
    vi.advanceTimersByTime(deadPeerBoundMs(INTERVAL) - SILENT_INTERVALS_ALLOWED * INTERVAL + 1);
    expect(dead).toHaveBeenCalledTimes(1);
    expect(deadPeerBoundMs(INTERVAL)).toBeLessThan(10_000); // the SPEC's error frame reaches a stream within 10 s
  });

  it("stops watching when told: no more pings, no verdict", () => {
    const socket = new FakeSocket();
    const { dead, stop } = watch(socket);
    stop();
    vi.advanceTimersByTime(60_000);
    expect(socket.pings).toBe(0);
    expect(dead).not.toHaveBeenCalled();
    expect(socket.listenerCount("message") + socket.listenerCount("pong") + socket.listenerCount("ping")).toBe(0);
  });
});
