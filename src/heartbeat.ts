// WebSocket liveness: ping every interval and drop a peer that has not answered the previous ping, so a
// machine that vanished without closing its socket leaves the directory within two intervals.
import { WebSocket } from "ws";

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
    // a link still connecting has nothing to ping; the client's handshake timeout covers that stage
    if (ws.readyState === WebSocket.OPEN) ws.ping();
    else alive = true;
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** How long a client waits for the coordinator's WebSocket handshake before it gives up and retries. */
export const HANDSHAKE_TIMEOUT_MS = 10_000;

/** Ping interval on the coordinator's links: a vanished peer is noticed within about twice this. */
export const DEFAULT_HEARTBEAT_MS = 2_000;
