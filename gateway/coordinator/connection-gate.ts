// The coordinator port faces strangers. A connection is pending until it proves itself (an agent granted a rung,
// a gateway that presented the secret); pending connections are capped in total and per source address, and each
// must prove itself within the handshake deadline. Over a cap a connection is answered 503 and closed at once,
// so an idle flood holds a bounded number of file descriptors and never starves the links already proven.
import type { Socket } from "node:net";
import { addressKey } from "../http/address-key.ts";
import type { ConnectionLog } from "./connection-log.ts";

export interface GateLimits {
  /** `--handshake-timeout-ms`: from accept to proven. */
  handshakeMs: number;
  /** `--max-pending-connections`: unproven connections in total. */
  maxPending: number;
  /** `--max-pending-per-address`: unproven connections from one address (IPv6: one /64). */
  maxPendingPerAddress: number;
}

/**
 * 10 s to prove itself: an honest agent's first grant may wait on its hardware attestor (a program it runs per
 * connection) on a loaded machine, the same floor as the answer to a re-challenge (agent-link.ts).
 */
export const DEFAULT_GATE_LIMITS: GateLimits = { handshakeMs: 10_000, maxPending: 1_024, maxPendingPerAddress: 128 };

const OVER_CAP = "HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\nretry-after: 5\r\ncontent-length: 0\r\n\r\n";

export class ConnectionGate {
  private readonly pending = new Map<Socket, { address: string; timer: NodeJS.Timeout }>();
  private readonly perAddress = new Map<string, number>();

  constructor(
    private readonly limits: GateLimits,
    private readonly log: ConnectionLog,
  ) {}

  get size(): number {
    return this.pending.size;
  }

  /** A new TCP connection: pending under the caps, or answered 503 and closed. */
  admit(socket: Socket): void {
    const address = addressKey(socket.remoteAddress ?? "?");
    if (this.pending.size >= this.limits.maxPending || (this.perAddress.get(address) ?? 0) >= this.limits.maxPendingPerAddress) {
      this.log.count("over_cap");
      socket.end(OVER_CAP, () => socket.destroy());
      return;
    }
    this.log.count("opened");
    const timer = setTimeout(() => {
      this.log.count("timed_out");
      socket.destroy();
    }, this.limits.handshakeMs).unref();
    this.pending.set(socket, { address, timer });
    this.perAddress.set(address, (this.perAddress.get(address) ?? 0) + 1);
    socket.once("close", () => {
      if (this.release(socket)) this.log.count("closed_unproven");
    });
  }

  /** The connection proved itself: no deadline, and it no longer counts against the caps. */
  proven(socket: Socket): void {
    if (this.release(socket)) this.log.count("proven");
  }

  /** Clears every deadline (the coordinator is closing). */
  stop(): void {
    for (const socket of [...this.pending.keys()]) this.release(socket);
  }

  private release(socket: Socket): boolean {
    const entry = this.pending.get(socket);
    if (entry === undefined) return false;
    clearTimeout(entry.timer);
    this.pending.delete(socket);
    const left = (this.perAddress.get(entry.address) ?? 1) - 1;
    if (left === 0) this.perAddress.delete(entry.address);
    else this.perAddress.set(entry.address, left);
    return true;
  }
}
