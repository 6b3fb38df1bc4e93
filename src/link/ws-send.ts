// Sending JSON on a link WebSocket. A session produces many small messages at once (a burst of tokens, the
// frames a relay passes on), and ws writes each with its own syscall; corking the socket until the current
// tick's work is done sends such a burst in one write. A token produced later is never held back by this.
import type { Socket } from "node:net";
import { WebSocket } from "ws";

/** `sent`, when given, runs once the message is written to the socket, or at once when it is dropped (not open). */
export function jsonSender<T>(ws: WebSocket): (message: T, sent?: () => void) => void {
  let corked = false;
  return (message, sent) => {
    if (ws.readyState !== WebSocket.OPEN) return sent?.();
    // ws keeps its TCP socket in a private field; corking it is safe (ws corks it around every frame itself)
    const socket = (ws as unknown as { _socket?: Socket })._socket;
    if (socket && !corked) {
      corked = true;
      socket.cork();
      process.nextTick(() => {
        corked = false;
        socket.uncork();
      });
    }
    ws.send(JSON.stringify(message), sent && (() => sent()));
  };
}
