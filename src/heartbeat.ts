// WebSocket liveness: ping every interval and drop a peer that has not answered the previous ping, so a
// machine that vanished without closing its socket leaves the directory within two intervals.
import type { WebSocket } from "ws";

export function keepAlive(ws: WebSocket, intervalMs: number, onDead: () => void): () => void {
  let alive = true;
  const mark = () => (alive = true);
  ws.on("pong", mark);
  ws.on("message", mark);
  const timer = setInterval(() => {
    if (!alive) {
      onDead();
      return;
    }
    alive = false;
    ws.ping();
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** Ping interval on the coordinator's links: a vanished peer is noticed within about twice this. */
export const DEFAULT_HEARTBEAT_MS = 2_000;
