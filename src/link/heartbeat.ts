// Link liveness, the client end (docs/architecture.md "Faults"): an agent or a remote gateway beats on a quiet
// link, and the coordinator, which never pings, drops a link silent for two intervals (gateway/coordinator/liveness-sweep.ts).
//
// The beats of idle agents are nearly all of a big coordinator's idle cost (a read and its event-loop turn, about
// 30 µs each on a small VM), so they are as few as the bounds allow: anything heard proves a peer alive, so a link
// that carries traffic is not pinged; and the coordinator answers only the beats that ask (a ping with a payload),
// since a pong costs it a write about as dear as the read. An agent asks once the coordinator has been silent for
// AGENT_ASK_EVERY idle intervals, on about every 7th beat: it need not judge the coordinator fast, since one that
// restarts, or drops it during a partition, resets the old connection at the agent's next beat anyway.
// The bounds, at the 2 s default:
// - a vanished idle agent (beats every 4.5 s) leaves the directory within 9.4 s (9 s of silence, then the sweep's
//   next tick of 0.25 s, which may run up to half a tick late): idlePeerBoundMs;
// - an agent that dies mid-session (beats every 2 s) is dropped within 4.4 s, so its stream gets the SPEC's
//   provider_error within 10 s: deadPeerBoundMs; a gateway link is judged the same;
// - a gateway judges the coordinator within 6 s (it asks on every beat), an agent within 45 s (peerAllowanceMs);
// - an agent beats from a thread of its own (agent/daemon/link-thread.ts), so work that holds its main thread for
//   seconds (a model's load) holds back no beat; it vouches for that thread while it turns within 30 s, so one stuck
//   for good, its process alive, is dropped within 30 s and deadPeerBoundMs.
// Every judge times silence on a clock that stands still while the judge itself stalls (awake-clock.ts).
import type { WebSocket } from "ws";
import { stallOf } from "./awake-clock.ts";

/**
 * WebSocket.OPEN, the same in every implementation: named here so that the command lines, which read this module's
 * defaults for their flags, start without loading ws.
 */
const OPEN = 1;

/** The busy ping interval: a gateway's, and an agent's while it runs a session (`--heartbeat-ms`). */
export const DEFAULT_HEARTBEAT_MS = 2_000;
/** An idle agent beats this many times less often: the longest beat that still leaves a vanished one within 10 s. */
export const IDLE_HEARTBEAT_FACTOR = 2.25;
/**
 * Intervals of silence before a peer is dropped: beats come at most 1.2 intervals apart, so a beat may be late
 * by most of an interval (a loaded machine, a retransmit) and the peer still stays.
 */
export const SILENT_INTERVALS_ALLOWED = 2;
/** An agent asks the coordinator for an answer once it has been silent this many idle intervals: on about every 7th beat. */
export const AGENT_ASK_EVERY = 8;
/** A beat that asks for an answer carries this payload; the coordinator echoes it in a pong. */
export const ASK = Buffer.from("?");
/** How long a client waits for the coordinator's WebSocket handshake before it gives up and retries. */
export const HANDSHAKE_TIMEOUT_MS = 10_000;
/** A client's beat falls due up to this fraction of an interval late, so links started together do not beat in step. */
const JITTER = 0.2;

/** An idle agent's ping interval. */
export function idleHeartbeatMs(heartbeatMs: number): number {
  return IDLE_HEARTBEAT_FACTOR * heartbeatMs;
}

/** The silence allowed on a link that beats every `intervalMs`. */
export function allowanceMs(intervalMs: number): number {
  return SILENT_INTERVALS_ALLOWED * intervalMs;
}

/** How often the coordinator's sweep looks at its links: a pass over 10,000 costs tens of µs, so a verdict need not wait. */
export function sweepTickMs(heartbeatMs: number): number {
  return heartbeatMs / 8;
}

/** The allowed silence, then the sweep's next tick, which may be up to half a tick late and still count the time. */
function boundMs(intervalMs: number, heartbeatMs: number): number {
  return Math.ceil(allowanceMs(intervalMs) + 1.5 * sweepTickMs(heartbeatMs));
}

/** The longest a vanished busy agent (or gateway) stays linked at the coordinator: 4.4 s at the 2 s default. */
export function deadPeerBoundMs(heartbeatMs: number): number {
  return boundMs(heartbeatMs, heartbeatMs);
}

/** The longest a vanished idle agent stays in the directory: 9.4 s at the 2 s default. */
export function idlePeerBoundMs(heartbeatMs: number): number {
  return boundMs(idleHeartbeatMs(heartbeatMs), heartbeatMs);
}

/** The longest a client lets the peer be silent before it asks for an answer. */
export function askAfterMs(idleMs: number, askEvery: number): number {
  return askEvery * idleMs;
}

/** How long a client lets the peer be silent: askAfterMs, then two intervals for an answer. */
export function peerAllowanceMs(idleMs: number, askEvery: number): number {
  return askAfterMs(idleMs, askEvery) + allowanceMs(idleMs);
}

export interface BeatIntervals {
  /** The ping interval while busy. */
  busyMs: number;
  /** The ping interval otherwise (defaults to busyMs). */
  idleMs?: number;
  /** The peer is asked for an answer once it has been silent this many idle intervals (default 1: every beat asks). */
  askEvery?: number;
  /**
   * Whether the owner is alive by its own measure, when the beats come from a thread other than the one doing its
   * work (agent/daemon/link-thread.ts): while it is not, no beat goes out, so the peer finds it dead as it would a
   * hung process. Default: always.
   */
  alive?: () => boolean;
}

/** A client end's heartbeat on one connection. */
export interface KeepAlive {
  /** Stops watching: no more pings, no verdict. */
  stop(): void;
  /** The owner started (true) or finished (false) the work the coordinator watches at the busy rate. */
  busy(on: boolean): void;
  /** A message went to the peer: it hears us, so no beat is due on that account. */
  sent(): void;
}

/**
 * The client end: beats when this end has been quiet for the current interval (the coordinator must hear us),
 * asks for an answer when the peer has been quiet past askAfterMs (we must hear it; at most once an interval,
 * so a gateway that only sends a long stream's requests still hears the coordinator), and calls `onDead` once
 * when the peer has been silent past peerAllowanceMs. One timer, set for when the next beat falls due.
 */
export function keepAlive(ws: WebSocket, intervals: BeatIntervals, onDead: () => void, random: () => number = Math.random): KeepAlive {
  const { busyMs } = intervals;
  const idleMs = intervals.idleMs ?? busyMs;
  const askEvery = intervals.askEvery ?? 1;
  const alive = intervals.alive ?? (() => true);
  const askAfter = askAfterMs(idleMs, askEvery);
  const allowed = peerAllowanceMs(idleMs, askEvery);
  let busy = false;
  let stopped = false;
  let lastHeard = performance.now();
  let lastSent = lastHeard;
  let lastAsk = -Infinity;
  let due = 0;
  /** A beat fell due while the owner was not alive: none went out. */
  let withheld = false;
  let timer: NodeJS.Timeout | undefined;
  let recheck: NodeJS.Immediate | undefined;
  const interval = () => (busy ? busyMs : idleMs);
  const heard = () => (lastHeard = performance.now());
  // ws answers a ping with a pong by itself: the peer hears us too
  const pinged = () => (lastHeard = lastSent = performance.now());
  ws.on("pong", heard);
  ws.on("ping", pinged);
  ws.on("message", heard);
  const silentFor = () => performance.now() - lastHeard;
  /** This end quiet for an interval, or the peer quiet long enough to ask it, and no ask in the last interval. */
  const beatDue = () => Math.min(lastSent + interval(), Math.max(lastHeard + askAfter, lastAsk + interval()));
  const check = () => {
    timer = undefined;
    const now = performance.now();
    // a stall of this process itself (a long GC, a starved machine) is no silence of the peer's; a timer
    // that is merely late by a little counts as it is, so a vanished peer is not kept longer under load
    lastHeard += stallOf(due, busyMs / 2);
    // a link still connecting has nothing to ping; the handshake timeout covers that stage
    if (ws.readyState !== OPEN) lastHeard = lastSent = now;
    if (silentFor() >= allowed) {
      // judge only after this turn's network reads: an answer already in the socket counts
      recheck = setImmediate(() => {
        recheck = undefined;
        if (silentFor() < allowed) return schedule();
        stop();
        onDead();
      });
      return;
    }
    withheld = now >= beatDue() && !alive();
    if (now >= beatDue() && !withheld) {
      lastSent = now;
      // a beat that does not ask is enough for the coordinator, and costs it no answer; a beat asks when the
      // ask would otherwise fall due before the next beat, so an idle agent's asks ride on its beats
      if (now + (1 + JITTER) * interval() - lastHeard >= askAfter) {
        lastAsk = now;
        ws.ping(ASK);
      } else ws.ping();
    }
    schedule();
  };
  const schedule = () => {
    if (stopped) return;
    const now = performance.now();
    // a beat withheld is due again at once: the owner is looked at again a quarter interval on, not in a busy loop
    const next = Math.min(withheld ? now + interval() / 4 : beatDue(), lastHeard + allowed);
    const wait = Math.max(0, next - now) + JITTER * interval() * random();
    due = now + wait;
    timer = setTimeout(check, wait);
    timer.unref();
  };
  const stop = () => {
    stopped = true;
    clearTimeout(timer);
    if (recheck) clearImmediate(recheck);
    ws.off("pong", heard);
    ws.off("ping", pinged);
    ws.off("message", heard);
  };
  schedule();
  return {
    stop,
    busy: (on) => {
      if (on === busy) return;
      busy = on;
      // the next beat falls due at the new interval from now on: a session's first beat is not left on the idle timer
      if (timer === undefined) return; // a verdict is pending, or stopped
      clearTimeout(timer);
      schedule();
    },
    sent: () => (lastSent = performance.now()),
  };
}
