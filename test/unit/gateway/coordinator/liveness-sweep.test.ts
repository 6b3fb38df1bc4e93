// Link liveness at the coordinator (docs/architecture.md "Faults"): it never pings; one sweep over all its links
// drops those silent past their allowance (two intervals), and only the beats that ask get an answer.
import { describe, expect, it, vi } from "vitest";
import { WebSocket } from "ws";
import { allowanceMs, ASK, deadPeerBoundMs, idlePeerBoundMs, sweepTickMs } from "../../../../src/link/heartbeat.ts";
import { LivenessSweep } from "../../../../gateway/coordinator/liveness-sweep.ts";
import { BUSY, every, FakeSocket, IDLE, QUIET, stallFor, useFakeClock } from "../../../fixtures/heartbeat-fakes.ts";

useFakeClock();

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
    expect(idlePeerBoundMs(BUSY)).toBeLessThanOrEqual(10_000); // issue 18: a vanished idle agent leaves within 10 s
  });

  it(`an idle agent's allowance: gone within ${idlePeerBoundMs(BUSY)} ms, kept while it beats at the idle rate`, () => {
    const sweep = new LivenessSweep(TICK);
    const beating = new FakeSocket();
    const silent = new FakeSocket();
    const kept = watched(sweep, beating, allowanceMs(IDLE));
    const gone = watched(sweep, silent, allowanceMs(IDLE));
    every(IDLE * 1.2, 10 * IDLE, () => beating.emit("ping", QUIET));
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
    every(BUSY * 1.2, 120_000, () => links.forEach(({ event, socket }) => socket.emit(event, QUIET)));
    for (const { dead, stop } of watches) {
      expect(dead).not.toHaveBeenCalled();
      stop();
    }
    expect(links.every(({ socket }) => socket.pings === 0)).toBe(true);
  });

  it("answers only the beats that ask, echoing the ask; none while earlier writes wait", () => {
    const sweep = new LivenessSweep(TICK);
    const socket = new FakeSocket();
    const { stop } = watched(sweep, socket, allowanceMs(IDLE));
    socket.emit("ping", QUIET);
    expect(socket.pongs).toEqual([]);
    socket.emit("ping", ASK);
    expect(socket.pongs).toEqual([ASK]);
    socket.bufferedAmount = 1; // a peer that asks without reading what it is sent piles nothing up here
    socket.emit("ping", ASK);
    expect(socket.pongs).toEqual([ASK]);
    stop();
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
    // the first tick that finds it silent; a ping read in the same turn, after the timers, arrives then too
    vi.advanceTimersByTime((Math.floor(allowanceMs(BUSY) / TICK) + 1) * TICK - 1);
    setTimeout(() => socket.emit("ping", QUIET), 1); // created after the tick's timer: runs after it, before its setImmediate
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
