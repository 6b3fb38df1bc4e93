// WebSocket liveness that holds on a loaded machine and at scale: anything heard from the peer proves it
// alive (its pings too, so of two ends watching one quiet link only the first to ping does), so a link that
// carried traffic within the interval is not pinged; a quiet peer is pinged once an interval, and dropped only
// after several intervals of silence, so a late pong never drops a live agent. One check per interval per
// link, jittered so that thousands of links do not ping in step: a coordinator's idle cost is these checks.
import { WebSocket } from "ws";

/** Ping interval on the coordinator's links. */
export const DEFAULT_HEARTBEAT_MS = 2_000;
/**
 * Intervals of silence (pings unanswered, nothing else heard) before a peer is dropped: a quiet peer has at
 * least an interval and a half to answer its first ping, and a vanished one is gone within SPEC-sized time.
 */
export const SILENT_INTERVALS_ALLOWED = 2.5;
/** How long a client waits for the coordinator's WebSocket handshake before it gives up and retries. */
export const HANDSHAKE_TIMEOUT_MS = 10_000;

/** The longest a vanished peer stays: the allowed silence plus one check, which runs every interval ±20%. */
export function deadPeerBoundMs(intervalMs: number): number {
  return Math.ceil(SILENT_INTERVALS_ALLOWED * intervalMs + 1.2 * intervalMs);
}

/** Watches `ws` until the returned stop function is called; `onDead` runs once when the peer has gone silent. */
export function keepAlive(ws: WebSocket, intervalMs: number, onDead: () => void, random: () => number = Math.random): () => void {
  let lastHeard = performance.now();
  let lastPing = -Infinity;
  let due = 0;
  let timer: NodeJS.Timeout | undefined;
  let recheck: NodeJS.Immediate | undefined;
  const mark = () => (lastHeard = performance.now());
  ws.on("pong", mark);
  ws.on("ping", mark);
  ws.on("message", mark);
  const silentFor = () => performance.now() - lastHeard;
  const check = () => {
    const now = performance.now();
    // a stall of this process itself (a long GC, a starved machine) is no silence of the peer's; a timer
    // that is merely late by a little counts as it is, so a vanished peer is not kept longer under load
    if (now - due > intervalMs / 2) lastHeard += now - due;
    // a link still connecting has nothing to ping; the client's handshake timeout covers that stage
    if (ws.readyState !== WebSocket.OPEN) lastHeard = now;
    if (silentFor() > SILENT_INTERVALS_ALLOWED * intervalMs) {
      // judge only after this turn's network reads: a pong already in the socket counts
      recheck = setImmediate(() => {
        if (silentFor() <= SILENT_INTERVALS_ALLOWED * intervalMs) return schedule();
        stop();
        onDead();
      });
      return;
    }
    if (silentFor() >= intervalMs && now - lastPing >= intervalMs) {
      lastPing = now;
      ws.ping();
    }
    schedule();
  };
  const schedule = () => {
    const wait = Math.round(intervalMs * (0.8 + 0.4 * random()));
    due = performance.now() + wait;
    timer = setTimeout(check, wait);
    timer.unref();
  };
  const stop = () => {
    clearTimeout(timer);
    if (recheck) clearImmediate(recheck);
    ws.off("pong", mark);
    ws.off("ping", mark);
    ws.off("message", mark);
  };
  schedule();
  return stop;
}
