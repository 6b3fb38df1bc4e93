// Link liveness (docs/architecture.md "Faults"): the client end pings (at the idle rate while idle, the busy rate
// while busy), the coordinator only listens, with one sweep over all its links; traffic proves a peer alive, and
// only several intervals of silence drop it, so a loaded machine's late pong never drops a live agent.
import { EventEmitter } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { WebSocket } from "ws";
import {
  allowanceMs, deadPeerBoundMs, DEFAULT_HEARTBEAT_MS, idleHeartbeatMs, idlePeerBoundMs, keepAlive, SILENT_INTERVALS_ALLOWED, sweepTickMs,
} from "../src/heartbeat.ts";
import { LivenessSweep } from "../src/liveness-sweep.ts";

const BUSY = DEFAULT_HEARTBEAT_MS;
const IDLE = idleHeartbeatMs(BUSY);

class FakeSocket extends EventEmitter {
  readyState: number = WebSocket.OPEN;
  pings = 0;
  ping(): void {
    this.pings++;
  }
}

/** A peer that answers each ping after `ms`, as ws does by itself. */
function answering(socket: FakeSocket, ms = 10): FakeSocket {
  socket.ping = function (this: FakeSocket) {
    this.pings++;
    setTimeout(() => this.emit("pong"), ms);
  };
  return socket;
}

/** Runs `beat` every `everyMs` for `forMs`. */
function every(everyMs: number, forMs: number, beat: () => void): void {
  for (let t = 0; t < forMs; t += everyMs) {
    vi.advanceTimersByTime(everyMs);
    beat();
  }
}

/** From now on, performance.now() reads `ms` later than the fake clock: this process was frozen that long. */
function stallFor(ms: number): void {
  const now = performance.now.bind(performance);
  vi.spyOn(performance, "now").mockImplementation(() => now() + ms);
}

beforeEach(() => vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setImmediate", "clearImmediate", "performance"] }));
afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe("Faults: link liveness at the client end (the only end that pings)", () => {
  function client(socket: FakeSocket, idle = true) {
    const dead = vi.fn();
    const beat = keepAlive(socket as unknown as WebSocket, { busyMs: BUSY, ...(idle ? { idleMs: IDLE } : {}) }, dead, () => 0);
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
    vi.advanceTimersByTime(IDLE + 5_000); // pinged at 8 s; 5 s since
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

  it("an agent that only sends (a busy stream) still pings, so it hears the coordinator", () => {
    const socket = answering(new FakeSocket());
    const { dead, beat } = client(socket);
    beat.busy(true);
    every(100, 20 * BUSY, () => beat.sent());
    // each ping falls due a busy interval after the pong before it, which comes 10 ms after its ping
    expect(socket.pings).toBe(Math.floor((20 * BUSY) / (BUSY + 10)));
    expect(dead).not.toHaveBeenCalled();
    beat.stop();
  });

  it("a quiet peer that answers its pings stays, even when each pong comes an interval late", () => {
    const socket = answering(new FakeSocket(), IDLE);
    const { dead, beat } = client(socket);
    vi.advanceTimersByTime(20 * IDLE);
    expect(socket.pings).toBeGreaterThan(8);
    expect(dead).not.toHaveBeenCalled();
    beat.stop();
  });

  it(`a silent coordinator is dropped after ${SILENT_INTERVALS_ALLOWED} idle intervals (pongs come at the idle rate), not before`, () => {
    const socket = new FakeSocket();
    const { dead } = client(socket);
    vi.advanceTimersByTime(allowanceMs(IDLE) - 1);
    expect(dead).not.toHaveBeenCalled();
    expect(socket.pings).toBe(2);
    vi.advanceTimersByTime(10); // its verdict waits for the network reads of the turn it falls due in
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

describe("Faults: link liveness at the coordinator (one sweep, no pings)", () => {
  const TICK = sweepTickMs(BUSY);

  function watched(sweep: LivenessSweep, socket: FakeSocket, allowance = allowanceMs(BUSY)) {
    const dead = vi.fn();
    const watch = sweep.watch(socket as unknown as WebSocket, { allowanceMs: allowance, onDead: dead });
    return { dead, stop: watch.stop, allow: watch.allow };
  }

  it(`drops a silent link after its allowance and not before, within the bound (${deadPeerBoundMs(BUSY)} ms at ${BUSY} ms)`, () => {
    const sweep = new LivenessSweep(TICK);
    const socket = new FakeSocket();
    const { dead } = watched(sweep, socket);
    vi.advanceTimersByTime(allowanceMs(BUSY));
    expect(dead).not.toHaveBeenCalled();
    vi.advanceTimersByTime(deadPeerBoundMs(BUSY) - allowanceMs(BUSY));
    expect(dead).toHaveBeenCalledTimes(1);
    expect(socket.pings).toBe(0);
    expect(sweep.size).toBe(0);
    expect(deadPeerBoundMs(BUSY)).toBeLessThan(10_000); // the SPEC's error frame reaches a stream within 10 s
  });

  it(`an idle agent's allowance: gone within ${idlePeerBoundMs(BUSY)} ms, kept while it beats at the idle rate`, () => {
    const sweep = new LivenessSweep(TICK);
    const beating = new FakeSocket();
    const silent = new FakeSocket();
    const kept = watched(sweep, beating, allowanceMs(IDLE));
    const gone = watched(sweep, silent, allowanceMs(IDLE));
    every(IDLE * 1.2, 10 * IDLE, () => beating.emit("ping"));
    expect(kept.dead).not.toHaveBeenCalled();
    expect(gone.dead).toHaveBeenCalledTimes(1);
    kept.stop();
    const late = new FakeSocket();
    const judged = watched(sweep, late, allowanceMs(IDLE));
    vi.advanceTimersByTime(allowanceMs(IDLE));
    expect(judged.dead).not.toHaveBeenCalled();
    vi.advanceTimersByTime(idlePeerBoundMs(BUSY) - allowanceMs(IDLE));
    expect(judged.dead).toHaveBeenCalledTimes(1);
  });

  it("messages, pings and pongs each keep a link", () => {
    const sweep = new LivenessSweep(TICK);
    const links = (["message", "ping", "pong"] as const).map((event) => ({ event, socket: new FakeSocket() }));
    const watches = links.map(({ socket }) => watched(sweep, socket));
    every(BUSY * 1.2, 120_000, () => links.forEach(({ event, socket }) => socket.emit(event)));
    for (const { dead, stop } of watches) {
      expect(dead).not.toHaveBeenCalled();
      stop();
    }
    expect(links.every(({ socket }) => socket.pings === 0)).toBe(true);
  });

  it("a busy link's allowance counts from when it became busy, not from its last idle beat", () => {
    const sweep = new LivenessSweep(TICK);
    const socket = new FakeSocket();
    const { dead, allow } = watched(sweep, socket, allowanceMs(IDLE));
    vi.advanceTimersByTime(7_000); // last heard 7 s ago, more than the busy allowance
    allow(allowanceMs(BUSY));
    vi.advanceTimersByTime(allowanceMs(BUSY));
    expect(dead).not.toHaveBeenCalled();
    vi.advanceTimersByTime(deadPeerBoundMs(BUSY) - allowanceMs(BUSY));
    expect(dead).toHaveBeenCalledTimes(1);
  });

  it("back to idle, a link gets the idle allowance again", () => {
    const sweep = new LivenessSweep(TICK);
    const socket = new FakeSocket();
    const { dead, allow, stop } = watched(sweep, socket, allowanceMs(BUSY));
    vi.advanceTimersByTime(allowanceMs(BUSY) - 1_000);
    allow(allowanceMs(IDLE));
    vi.advanceTimersByTime(allowanceMs(IDLE) - allowanceMs(BUSY));
    expect(dead).not.toHaveBeenCalled();
    stop();
  });

  it("one timer for the sweep, however many links it watches; none once they are gone", () => {
    const sweep = new LivenessSweep(TICK);
    const stops = Array.from({ length: 1_000 }, () => watched(sweep, new FakeSocket(), allowanceMs(IDLE)).stop);
    expect(sweep.size).toBe(1_000);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(allowanceMs(IDLE) - TICK);
    expect(vi.getTimerCount()).toBe(1);
    for (const stop of stops) stop();
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a stall of this process is not the peers' silence", () => {
    const sweep = new LivenessSweep(TICK);
    const socket = new FakeSocket();
    const { dead } = watched(sweep, socket);
    vi.advanceTimersByTime(TICK - 1);
    stallFor(60_000); // frozen for a minute just before its tick was due
    vi.advanceTimersByTime(1);
    vi.advanceTimersByTime(allowanceMs(BUSY) - TICK);
    expect(dead).not.toHaveBeenCalled();
    vi.advanceTimersByTime(deadPeerBoundMs(BUSY));
    expect(dead).toHaveBeenCalledTimes(1); // the silence after the stall still counts
  });

  it("judges only after this turn's network reads: a beat read just after the tick counts", () => {
    const sweep = new LivenessSweep(TICK);
    const socket = new FakeSocket();
    const { dead, stop } = watched(sweep, socket);
    // the tick that finds it silent runs at 6 s; a ping read in the same turn, after the timers, arrives then too
    vi.advanceTimersByTime(6 * TICK - 1);
    setTimeout(() => socket.emit("ping"), 1); // created after the tick's timer: runs after it, before its setImmediate
    vi.advanceTimersByTime(1);
    expect(dead).not.toHaveBeenCalled();
    stop();
  });

  it("a socket not open yet is not judged; its silence counts from when it opens", () => {
    const sweep = new LivenessSweep(TICK);
    const socket = new FakeSocket();
    socket.readyState = WebSocket.CONNECTING;
    const { dead, stop } = watched(sweep, socket);
    vi.advanceTimersByTime(60_000);
    expect(dead).not.toHaveBeenCalled();
    socket.readyState = WebSocket.OPEN;
    socket.emit("open");
    vi.advanceTimersByTime(allowanceMs(BUSY));
    expect(dead).not.toHaveBeenCalled();
    vi.advanceTimersByTime(deadPeerBoundMs(BUSY) - allowanceMs(BUSY));
    expect(dead).toHaveBeenCalledTimes(1);
    stop();
  });

  it("links that come and go (slots freed and taken again): each verdict reaches its own link", () => {
    const sweep = new LivenessSweep(TICK);
    const first = Array.from({ length: 100 }, () => watched(sweep, new FakeSocket()));
    for (const link of first.slice(0, 50)) link.stop();
    const quiet = watched(sweep, new FakeSocket(), allowanceMs(BUSY));
    const sockets = Array.from({ length: 100 }, () => new FakeSocket());
    const second = sockets.map((socket) => watched(sweep, socket, allowanceMs(IDLE)));
    expect(sweep.size).toBe(151);
    every(BUSY, 2 * idlePeerBoundMs(BUSY), () => sockets.forEach((socket) => socket.emit("pong")));
    expect(second.every(({ dead }) => dead.mock.calls.length === 0)).toBe(true);
    expect(quiet.dead).toHaveBeenCalledTimes(1);
    expect(first.slice(0, 50).every(({ dead }) => dead.mock.calls.length === 0)).toBe(true);
    expect(first.slice(50).every(({ dead }) => dead.mock.calls.length === 1)).toBe(true);
    expect(sweep.size).toBe(100);
  });

  it("stops watching when told: no verdict, no listeners left", () => {
    const sweep = new LivenessSweep(TICK);
    const socket = new FakeSocket();
    socket.readyState = WebSocket.CONNECTING;
    const { dead, stop, allow } = watched(sweep, socket);
    stop();
    allow(1);
    vi.advanceTimersByTime(60_000);
    expect(dead).not.toHaveBeenCalled();
    expect(["message", "pong", "ping", "open"].map((e) => socket.listenerCount(e))).toEqual([0, 0, 0, 0]);
  });
});
