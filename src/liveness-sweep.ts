// The coordinator's watch over all its links at once (docs/architecture.md "Faults"): it never pings and keeps no
// timer per link (the client ends ping, src/heartbeat.ts); it notes when each link was last heard, and one shared
// tick drops the links that have been silent longer than their allowance.
import { WebSocket } from "ws";

export interface WatchOptions {
  /** How long the link may be silent now; read on every tick, since an agent's shrinks while it runs a session. */
  allowanceMs: () => number;
  /**
   * Silence counts from no earlier than this (performance.now()): the moment the allowance last shrank, so an
   * idle agent last heard 7 s ago is not dropped the instant it is given work, but gets the whole busy allowance.
   */
  since?: () => number;
  /** Runs once, when the link has been silent past its allowance; the sweep stops watching it first. */
  onDead: () => void;
}

interface Watched extends WatchOptions {
  ws: WebSocket;
  heard: number;
  mark: () => void;
}

export class LivenessSweep {
  private readonly links = new Set<Watched>();
  private timer?: NodeJS.Timeout;
  /** When the running tick was due: a tick much later than that means this process stalled. */
  private due = 0;

  constructor(private readonly tickMs: number) {}

  /** How many links are watched. */
  get size(): number {
    return this.links.size;
  }

  /** Watches `ws` until the returned function is called (or its verdict runs). */
  watch(ws: WebSocket, options: WatchOptions): () => void {
    const link: Watched = { ...options, ws, heard: performance.now(), mark: () => (link.heard = performance.now()) };
    // a number written per message is all a live link costs between ticks
    ws.on("message", link.mark);
    ws.on("ping", link.mark);
    ws.on("pong", link.mark);
    this.links.add(link);
    if (this.timer === undefined) this.schedule();
    return () => this.unwatch(link);
  }

  private unwatch(link: Watched): void {
    if (!this.links.delete(link)) return;
    link.ws.off("message", link.mark);
    link.ws.off("ping", link.mark);
    link.ws.off("pong", link.mark);
    // no links, no timer: an idle process with nothing connected does not wake up
    if (this.links.size === 0) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  private schedule(): void {
    this.due = performance.now() + this.tickMs;
    this.timer = setTimeout(this.tick, this.tickMs);
    this.timer.unref();
  }

  private readonly tick = (): void => {
    const now = performance.now();
    const late = now - this.due;
    // a stall of this process itself (a long GC, a starved machine) is no silence of the peers'; a tick that is
    // merely late by a little counts as it is, so a vanished peer is not kept longer under load
    const stalled = late > this.tickMs / 2;
    let suspects: Watched[] | undefined;
    for (const link of this.links) {
      if (stalled) link.heard = Math.max(link.heard, link.since?.() ?? -Infinity) + late;
      // a socket not open yet (or closing) is not judged; its close ends the watch
      if (link.ws.readyState !== WebSocket.OPEN) link.heard = now;
      else if (silence(link, now) > link.allowanceMs()) (suspects ??= []).push(link);
    }
    // judge only after this turn's network reads: a beat already in the socket counts
    if (suspects) setImmediate(() => this.judge(suspects));
    this.schedule();
  };

  private judge(suspects: Watched[]): void {
    const now = performance.now();
    for (const link of suspects) {
      if (!this.links.has(link) || link.ws.readyState !== WebSocket.OPEN || silence(link, now) <= link.allowanceMs()) continue;
      this.unwatch(link);
      link.onDead();
    }
  }
}

function silence(link: Watched, now: number): number {
  return now - Math.max(link.heard, link.since?.() ?? -Infinity);
}
