// The directory as the gateways' copies learn it (DESIGN §7): the whole of it when a gateway links, then the
// providers that changed (load, rung, aliases, presence), gathered for the rest of the turn and sent as one
// message per gateway, so a burst of changes costs one message and a copy is never more than a turn behind.
import type { DirectoryEntry, QueueCaps, ToGateway } from "../../src/wire/gateway.ts";

/** A gateway link as the feed sees it. */
export interface FeedPort {
  send(message: ToGateway): void;
}

/** Providers per message of the whole directory (about 330 bytes each as JSON). */
export const SNAPSHOT_PART = 1_000;

export class DirectoryFeed {
  private readonly ports = new Map<FeedPort, string[]>();
  /** Providers changed since the last flush. */
  private readonly dirty = new Set<string>();
  private scheduled = false;

  /**
   * `entry` reads a provider as routing sees it now: undefined once it takes no sessions (gone, or leaving);
   * `all` reads every one that does; `queue`, the caps each copy learns with its first part.
   */
  constructor(
    private readonly entry: (id: string) => DirectoryEntry | undefined,
    private readonly all: () => DirectoryEntry[],
    private readonly queue?: QueueCaps,
  ) {}

  /**
   * A gateway linked: it gets the whole directory first, then every change. The whole directory goes in
   * parts, so 10,000 providers stay far below a link's largest message; all but the last say `more`.
   */
  subscribe(port: FeedPort): void {
    this.ports.set(port, []);
    const all = this.all();
    for (let at = 0; at === 0 || at < all.length; at += SNAPSHOT_PART) {
      const more = at + SNAPSHOT_PART < all.length;
      const first = at === 0 ? { reset: true as const, ...(this.queue ? { queue: this.queue } : {}) } : {};
      port.send({ t: "directory", ...first, ...(more ? { more: true as const } : {}), put: all.slice(at, at + SNAPSHOT_PART), gone: [] });
    }
  }

  unsubscribe(port: FeedPort): void {
    this.ports.delete(port);
  }

  /** Provider `id` changed (or left): every copy learns it by the end of this turn. */
  touch(id: string): void {
    if (this.ports.size === 0) return;
    this.dirty.add(id);
    this.flushLater();
  }

  /** Session `id` was placed (or refused): the gateway's next delta says its copy need not count it any more. */
  settled(port: FeedPort, sessionId: string): void {
    const settled = this.ports.get(port);
    if (!settled) return;
    settled.push(sessionId);
    this.flushLater();
  }

  /** One flush at the end of this turn, however many changes it saw. */
  private flushLater(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => this.flush());
  }

  /** Sends what changed now: before a refusal, so the gateway chooses again from a copy that already holds why. */
  flush(): void {
    this.scheduled = false;
    if (this.dirty.size === 0 && ![...this.ports.values()].some((s) => s.length > 0)) return;
    const put: DirectoryEntry[] = [];
    const gone: string[] = [];
    for (const id of this.dirty) {
      const entry = this.entry(id);
      if (entry) put.push(entry);
      else gone.push(id);
    }
    this.dirty.clear();
    for (const [port, settled] of this.ports) {
      if (put.length === 0 && gone.length === 0 && settled.length === 0) continue;
      port.send({ t: "directory", put, gone, ...(settled.length > 0 ? { placed: settled.splice(0) } : {}) });
    }
  }
}
