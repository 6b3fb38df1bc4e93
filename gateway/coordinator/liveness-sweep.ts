// The coordinator's end of link liveness (docs/architecture.md "Faults"): it never pings and keeps no timer per link
// (the client ends beat, src/link/heartbeat.ts); it notes when each link was last heard, answers only the beats that ask,
// and one shared tick drops the links that have been silent longer than their allowance.
import { WebSocket } from "ws";
import { AwakeClock } from "../../src/link/awake-clock.ts";

export interface WatchOptions {
  /** How long the link may be silent; `Watch.allow` changes it (an agent's shrinks while it runs a session). */
  allowanceMs: number;
  /** Runs once, when the link has been silent past its allowance; the sweep stops watching it first. */
  onDead: () => void;
}

export interface Watch {
  /** Stops watching (the link closed). */
  stop(): void;
  /**
   * Sets the allowance. When it shrinks, silence counts from now at the earliest: an idle agent last heard 7 s
   * ago is not dropped the instant it is given work, but gets the whole busy allowance from then.
   */
  allow(allowanceMs: number): void;
}

interface Watched {
  ws: WebSocket;
  onDead: () => void;
  mark: () => void;
  /** The ping listener: a beat is heard like any frame, and answered only when it asks (its servers set autoPong off). */
  beat: (data: Buffer) => void;
  /** Its index in the sweep's arrays; -1 once it is no longer watched. */
  slot: number;
}

export class LivenessSweep {
  // what a tick reads, one slot per link in flat arrays: 10,000 links held as objects and closures scattered
  // over the heap took 7-16 ms a tick in cache misses on a small VM; these take a few hundredths of that
  private heard = new Float64Array(64);
  /** Silence counts from no earlier than this: when the allowance last shrank. */
  private since = new Float64Array(64);
  /** Infinity in a free slot: never judged. */
  private allowance = new Float64Array(64).fill(Infinity);
  private readonly links: (Watched | undefined)[] = [];
  private readonly free: number[] = [];
  private used = 0;
  private watched = 0;
  private timer?: NodeJS.Timeout;
  /** When the running tick was due: a tick much later than that means this process stalled. */
  private due = 0;
  /** Every time the sweep keeps runs on it: a stall of this process is no silence of the peers'. */
  private readonly clock = new AwakeClock();

  constructor(private readonly tickMs: number) {}

  /** How many links are watched. */
  get size(): number {
    return this.watched;
  }

  /** Watches `ws` until `stop` (or its verdict). */
  watch(ws: WebSocket, options: WatchOptions): Watch {
    const slot = this.free.pop() ?? this.grow();
    const link: Watched = {
      ws,
      onDead: options.onDead,
      slot,
      mark: () => (this.heard[link.slot] = this.clock.now()),
      beat: (data) => {
        link.mark();
        // a pong costs a write as dear as the beat's read, so most beats get none; and none while earlier
        // writes wait, so a peer that asks without reading cannot pile answers up here
        if (data.length > 0 && ws.bufferedAmount === 0) ws.pong(data);
      },
    };
    this.links[slot] = link;
    this.heard[slot] = this.clock.now();
    this.since[slot] = -Infinity;
    this.allowance[slot] = options.allowanceMs;
    // a number written per message is all a live link costs between ticks
    ws.on("message", link.mark);
    ws.on("ping", link.beat);
    ws.on("pong", link.mark);
    // a socket not open yet is not judged (see judge); its silence counts from when it opens
    if (ws.readyState === WebSocket.CONNECTING) ws.once("open", link.mark);
    if (this.watched++ === 0) this.schedule();
    return {
      stop: () => this.unwatch(link),
      allow: (ms) => {
        if (link.slot < 0) return;
        if (ms < this.allowance[link.slot]!) this.since[link.slot] = this.clock.now();
        this.allowance[link.slot] = ms;
      },
    };
  }

  private grow(): number {
    if (this.used === this.heard.length) {
      const size = this.heard.length * 2;
      const heard = new Float64Array(size);
      const since = new Float64Array(size);
      const allowance = new Float64Array(size).fill(Infinity);
      heard.set(this.heard);
      since.set(this.since);
      allowance.set(this.allowance);
      this.heard = heard;
      this.since = since;
      this.allowance = allowance;
    }
    return this.used++;
  }

  private unwatch(link: Watched): void {
    if (link.slot < 0) return;
    this.allowance[link.slot] = Infinity;
    this.links[link.slot] = undefined;
    this.free.push(link.slot);
    link.slot = -1;
    for (const event of ["message", "pong", "open"]) link.ws.off(event, link.mark);
    link.ws.off("ping", link.beat);
    // no links, no timer: a process with nothing connected does not wake up
    if (--this.watched === 0) {
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
    this.clock.woke(this.due, this.tickMs / 2);
    const now = this.clock.now();
    const { heard, since, allowance } = this;
    let suspects: Watched[] | undefined;
    for (let i = 0; i < this.used; i++) {
      if (now - Math.max(heard[i]!, since[i]!) > allowance[i]!) (suspects ??= []).push(this.links[i]!);
    }
    // judge only after this turn's network reads: a beat already in the socket counts
    if (suspects) setImmediate(() => this.judge(suspects));
    this.schedule();
  };

  private judge(suspects: Watched[]): void {
    const now = this.clock.now();
    for (const link of suspects) {
      const { slot } = link;
      if (slot < 0 || now - Math.max(this.heard[slot]!, this.since[slot]!) <= this.allowance[slot]!) continue;
      if (link.ws.readyState !== WebSocket.OPEN) {
        this.heard[slot] = now;
        continue;
      }
      this.unwatch(link);
      link.onDead();
    }
  }
}
