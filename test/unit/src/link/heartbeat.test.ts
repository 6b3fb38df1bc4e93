// Link liveness at the client end (docs/architecture.md "Faults"): an agent or gateway beats (at the idle rate while
// idle, the busy rate while busy) when it has been quiet, asks the coordinator for an answer now and then, and drops
// a coordinator silent past its allowance, so a loaded machine's late answer never drops a live link.
import { describe, expect, it, vi } from "vitest";
import type { WebSocket } from "ws";
import { AGENT_ASK_EVERY, askAfterMs, keepAlive, peerAllowanceMs } from "../../../../src/link/heartbeat.ts";
import { answering, BUSY, every, FakeSocket, IDLE, stallFor, useFakeClock } from "../../../fixtures/heartbeat-fakes.ts";

useFakeClock();

describe("Faults: link liveness at the client end (the only end that pings)", () => {
  /** An agent (idle rate, asks now and then) or, with `idle` false, a gateway (busy rate, asks on every beat). */
  function client(socket: FakeSocket, idle = true) {
    const dead = vi.fn();
    const intervals = idle ? { busyMs: BUSY, idleMs: IDLE, askEvery: AGENT_ASK_EVERY } : { busyMs: BUSY };
    const beat = keepAlive(socket as unknown as WebSocket, intervals, dead, () => 0);
    return { dead, beat };
  }

  it("pings once an idle interval while idle, and once a busy interval while busy", () => {
    const socket = answering(new FakeSocket());
    const { dead, beat } = client(socket);
    vi.advanceTimersByTime(IDLE - 1);
    expect(socket.pings).toBe(0);
    vi.advanceTimersByTime(10 * IDLE + 1 - IDLE);
    expect(socket.pings).toBe(10);
    beat.busy(true);
    vi.advanceTimersByTime(20 * BUSY);
    expect(socket.pings).toBe(30);
    beat.busy(false);
    vi.advanceTimersByTime(5 * IDLE);
    expect(socket.pings).toBe(35);
    expect(dead).not.toHaveBeenCalled();
    beat.stop();
  });

  it("given work, it pings at once when it has been quiet for a busy interval, not on the idle timer", () => {
    const socket = answering(new FakeSocket());
    const { beat } = client(socket);
    vi.advanceTimersByTime(IDLE + BUSY + 500); // pinged at the idle interval; more than a busy one since
    expect(socket.pings).toBe(1);
    beat.busy(true);
    vi.advanceTimersByTime(1);
    expect(socket.pings).toBe(2);
    vi.advanceTimersByTime(BUSY);
    expect(socket.pings).toBe(3);
    beat.stop();
  });

  it("a link that carries traffic both ways is never pinged and never dropped", () => {
    const socket = new FakeSocket();
    const { dead, beat } = client(socket);
    beat.busy(true);
    every(500, 60_000, () => {
      socket.emit("message", "{}");
      beat.sent();
    });
    expect(socket.pings).toBe(0);
    expect(dead).not.toHaveBeenCalled();
    beat.stop();
  });

  it("a peer that pings us is alive and hears our pong: this end sends no pings of its own", () => {
    const socket = new FakeSocket();
    const { dead, beat } = client(socket, false);
    every(1_500, 60_000, () => socket.emit("ping"));
    expect(socket.pings).toBe(0);
    expect(dead).not.toHaveBeenCalled();
    beat.stop();
  });

  it("a gateway that only hears (a long stream's frames) still pings, so the coordinator hears it", () => {
    const socket = answering(new FakeSocket());
    const { dead, beat } = client(socket, false);
    every(100, 20 * BUSY, () => socket.emit("message", "{}"));
    expect(socket.pings).toBe(20);
    expect(dead).not.toHaveBeenCalled();
    beat.stop();
  });

  it("an agent that only sends (a busy stream) still asks now and then, so it hears the coordinator", () => {
    const socket = answering(new FakeSocket());
    const { dead, beat } = client(socket);
    beat.busy(true);
    const askAfter = askAfterMs(IDLE, AGENT_ASK_EVERY);
    every(100, 3 * askAfter, () => beat.sent());
    // each ask falls due once the coordinator has been silent askAfter, that is after the answer before it, 10 ms after its ask
    expect(socket.pings).toBe(Math.floor((3 * askAfter) / (askAfter + 10)));
    expect(socket.asks).toBe(socket.pings);
    expect(dead).not.toHaveBeenCalled();
    beat.stop();
  });

  it(`an idle agent asks for an answer on about one beat in ${AGENT_ASK_EVERY - 1}; a gateway on every beat`, () => {
    const agent = answering(new FakeSocket());
    const gateway = answering(new FakeSocket());
    const a = client(agent);
    const g = client(gateway, false);
    vi.advanceTimersByTime(100 * IDLE);
    expect(agent.pings).toBe(100);
    expect(agent.asks).toBe(Math.floor(100 / (AGENT_ASK_EVERY - 1)));
    expect(gateway.asks).toBe(gateway.pings);
    expect(a.dead).not.toHaveBeenCalled();
    expect(g.dead).not.toHaveBeenCalled();
    a.beat.stop();
    g.beat.stop();
  });

  it("a quiet peer that answers its pings stays, even when each pong comes an interval late", () => {
    const socket = answering(new FakeSocket(), IDLE);
    const { dead, beat } = client(socket);
    vi.advanceTimersByTime(20 * IDLE);
    expect(socket.pings).toBeGreaterThan(8);
    expect(dead).not.toHaveBeenCalled();
    beat.stop();
  });

  it(`a silent coordinator is dropped after ${peerAllowanceMs(IDLE, AGENT_ASK_EVERY)} ms (asked, then two idle intervals), not before`, () => {
    const socket = new FakeSocket();
    const { dead } = client(socket);
    const allowed = peerAllowanceMs(IDLE, AGENT_ASK_EVERY);
    vi.advanceTimersByTime(allowed - 1);
    expect(dead).not.toHaveBeenCalled();
    expect(socket.pings).toBe(Math.floor((allowed - 1) / IDLE));
    expect(socket.asks).toBe(3); // on the beats from AGENT_ASK_EVERY - 1 on
    vi.advanceTimersByTime(10); // its verdict waits for the network reads of the turn it falls due in
    expect(dead).toHaveBeenCalledTimes(1);
  });

  it(`a silent coordinator is dropped by a gateway after ${peerAllowanceMs(BUSY, 1)} ms`, () => {
    const socket = new FakeSocket();
    const { dead } = client(socket, false);
    vi.advanceTimersByTime(peerAllowanceMs(BUSY, 1) - 1);
    expect(dead).not.toHaveBeenCalled();
    vi.advanceTimersByTime(10);
    expect(dead).toHaveBeenCalledTimes(1);
  });

  it("a stall of this process is not the peer's silence", () => {
    const socket = new FakeSocket();
    const { dead, beat } = client(socket);
    vi.advanceTimersByTime(IDLE - 1_000);
    stallFor(60_000); // frozen for a minute just before its timer was due
    vi.advanceTimersByTime(1_000);
    expect(dead).not.toHaveBeenCalled();
    expect(socket.pings).toBe(1);
    beat.stop();
  });

  it("beats only while its owner is alive by its own measure, and beats again, at once, when it is again", () => {
    const socket = answering(new FakeSocket());
    let alive = true;
    const intervals = { busyMs: BUSY, idleMs: IDLE, askEvery: AGENT_ASK_EVERY, alive: () => alive };
    const beat = keepAlive(socket as unknown as WebSocket, intervals, vi.fn(), () => 0);
    beat.busy(true);
    vi.advanceTimersByTime(3 * BUSY);
    expect(socket.pings).toBe(3);
    alive = false;
    const timers = vi.getTimerCount();
    vi.advanceTimersByTime(5 * BUSY);
    expect(socket.pings).toBe(3);
    // looked at again now and then, not in a loop of timers
    expect(vi.getTimerCount()).toBe(timers);
    alive = true;
    vi.advanceTimersByTime(BUSY / 4);
    expect(socket.pings).toBe(4);
    vi.advanceTimersByTime(BUSY);
    expect(socket.pings).toBe(5);
    beat.stop();
  });

  it("stops watching when told: no more pings, no verdict", () => {
    const socket = new FakeSocket();
    const { dead, beat } = client(socket);
    beat.stop();
    beat.busy(true);
    vi.advanceTimersByTime(60_000);
    expect(socket.pings).toBe(0);
    expect(dead).not.toHaveBeenCalled();
    expect(socket.listenerCount("message") + socket.listenerCount("pong") + socket.listenerCount("ping")).toBe(0);
  });
});
