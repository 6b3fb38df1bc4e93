// Link liveness (docs/architecture.md "Faults"). Only the client end of a link pings (an agent, a remote gateway):
// the coordinator holds up to 10,000 links and must cost nothing per quiet link, so it keeps no timer per link and
// only notes when each was last heard (src/liveness-sweep.ts). Anything heard proves a peer alive, so a link that
// carries traffic both ways is not pinged; a quiet one is pinged once an interval, and a peer is dropped only after
// two and a half intervals of silence, so a late pong on a loaded machine never drops a live agent.
//
// An idle agent beats every IDLE_HEARTBEAT_FACTOR intervals (8 s at the 2 s default), a busy one (running a session)
// and a gateway every interval: the beat rate of idle links is the coordinator's idle cost (about 30 µs a ping on a
// small VM). The bounds that follow, at the 2 s default (deadPeerBoundMs, idlePeerBoundMs):
// - an agent that dies mid-session is dropped within 6.5 s (5 s of silence, then the coordinator's next sweep tick
//   of 1 s, which may run up to half a tick late), so its stream gets the SPEC's provider_error within 10 s;
// - an idle agent that vanished leaves the directory within 21.5 s (20 s, then a tick); a request routed to it
//   meanwhile makes it busy, so it goes within the busy bound counted from then, and the request, of which the
//   gateway has seen no frame, is re-routed (unless pinned: then 503 provider_unavailable);
// - a gateway link is judged at the busy rate (6.5 s); an agent judges the coordinator at the idle rate (20 s).
import { WebSocket } from "ws";

/** The busy ping interval: a gateway's, and an agent's while it runs a session (`--heartbeat-ms`). */
export const DEFAULT_HEARTBEAT_MS = 2_000;
/** An idle agent pings this many times less often: idle links are nearly all of a big coordinator's links. */
export const IDLE_HEARTBEAT_FACTOR = 4;
/**
 * Intervals of silence (pings unanswered, nothing else heard) before a peer is dropped: a client's beats come at
 * most 1.2 intervals apart, so each has over an interval to get through, and a vanished peer is gone within SPEC-sized time.
 */
export const SILENT_INTERVALS_ALLOWED = 2.5;
/** How long a client waits for the coordinator's WebSocket handshake before it gives up and retries. */
export const HANDSHAKE_TIMEOUT_MS = 10_000;
/** A client's ping falls due up to this fraction of an interval late, so links started together do not ping in step. */
const JITTER = 0.2;

/** An idle agent's ping interval. */
export function idleHeartbeatMs(heartbeatMs: number): number {
  return IDLE_HEARTBEAT_FACTOR * heartbeatMs;
}

/** The silence allowed on a link that beats every `intervalMs`. */
export function allowanceMs(intervalMs: number): number {
  return SILENT_INTERVALS_ALLOWED * intervalMs;
}

/** How often the coordinator's sweep looks at its links: half an interval, so a verdict is never far past its allowance. */
export function sweepTickMs(heartbeatMs: number): number {
  return heartbeatMs / 2;
}

/** The allowed silence, then the sweep's next tick, which may be up to half a tick late and still count the time. */
function boundMs(intervalMs: number, heartbeatMs: number): number {
  return Math.ceil(allowanceMs(intervalMs) + 1.5 * sweepTickMs(heartbeatMs));
}

/** The longest a vanished busy agent (or gateway) stays linked at the coordinator: 6.5 s at the 2 s default. */
export function deadPeerBoundMs(heartbeatMs: number): number {
  return boundMs(heartbeatMs, heartbeatMs);
}

/** The longest a vanished idle agent stays in the directory: 21.5 s at the 2 s default. */
export function idlePeerBoundMs(heartbeatMs: number): number {
  return boundMs(idleHeartbeatMs(heartbeatMs), heartbeatMs);
}

export interface BeatIntervals {
  /** The ping interval while busy. */
  busyMs: number;
  /** The ping interval otherwise (defaults to busyMs); the peer's silence is judged against its allowance, since pongs come only that often. */
  idleMs?: number;
}

/** A client end's heartbeat on one connection. */
export interface KeepAlive {
  /** Stops watching: no more pings, no verdict. */
  stop(): void;
  /** The owner started (true) or finished (false) the work the coordinator watches at the busy rate. */
  busy(on: boolean): void;
  /** A message went to the peer: it hears us, so no ping is due on that account. */
  sent(): void;
}

/**
 * The client end: pings `ws` when either direction has been quiet for the current interval (the coordinator must
 * hear us, and we must hear it: a gateway that only receives a long stream's frames still pings), and calls
 * `onDead` once when the peer has been silent past the allowance. One timer, set for when the next ping falls due.
 */
export function keepAlive(ws: WebSocket, intervals: BeatIntervals, onDead: () => void, random: () => number = Math.random): KeepAlive {
  const { busyMs } = intervals;
  const idleMs = intervals.idleMs ?? busyMs;
  const allowed = allowanceMs(idleMs);
  let busy = false;
  let stopped = false;
  let lastHeard = performance.now();
  let lastSent = lastHeard;
  let lastPing = -Infinity;
  let due = 0;
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
  const check = () => {
    timer = undefined;
    const now = performance.now();
    // a stall of this process itself (a long GC, a starved machine) is no silence of the peer's; a timer
    // that is merely late by a little counts as it is, so a vanished peer is not kept longer under load
    if (now - due > busyMs / 2) lastHeard += now - due;
    // a link still connecting has nothing to ping; the handshake timeout covers that stage
    if (ws.readyState !== WebSocket.OPEN) lastHeard = lastSent = now;
    if (silentFor() >= allowed) {
      // judge only after this turn's network reads: a pong already in the socket counts
      recheck = setImmediate(() => {
        recheck = undefined;
        if (silentFor() < allowed) return schedule();
        stop();
        onDead();
      });
      return;
    }
    if (now >= pingDue()) {
      lastPing = lastSent = now;
      ws.ping();
    }
    schedule();
  };
  /** Either direction quiet for an interval, and no ping of ours in that interval already. */
  const pingDue = () => Math.max(Math.min(lastHeard, lastSent), lastPing) + interval();
  const schedule = () => {
    if (stopped) return;
    const now = performance.now();
    const next = Math.min(pingDue(), lastHeard + allowed);
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
      // the next ping falls due at the new interval from now on: a session's first beat is not left on the idle timer
      if (timer === undefined) return; // a verdict is pending, or stopped
      clearTimeout(timer);
      schedule();
    },
    sent: () => (lastSent = performance.now()),
  };
}
