// A gateway's view of every coordinator's directory feed on NATS (DESIGN §7), merged into the one stream of
// `directory` messages its copy reads: keyed by coordinator, so a provider belongs to the coordinator that last
// put it, a snapshot replaces only its coordinator's part, and a coordinator that goes quiet is forgotten whole.
// Core NATS may drop a message: a feed's sequence number that skips asks that coordinator for a fresh snapshot.
import type { DirectoryEntry, ToGateway } from "../../src/wire/gateway.ts";

type Directory = Extract<ToGateway, { t: "directory" }>;

export interface FeedSink {
  /** The merged change, for the gateway's copy. */
  emit(message: Directory): void;
  /** Coordinator `c`'s feed is out of step (or new here): ask it for its whole directory. */
  ask(c: string): void;
}

interface Feed {
  /** The last delta applied. */
  seq: number;
  synced: boolean;
  heard: number;
  asked: number;
  /** A snapshot arriving in parts. */
  parts?: DirectoryEntry[];
}

/** How long an unanswered snapshot ask waits before it is asked again. */
const ASK_AGAIN_MS = 2_000;

export class CoordinatorFeeds {
  private readonly feeds = new Map<string, Feed>();
  /** Provider id → the coordinator whose feed put it last. */
  private readonly owners = new Map<string, string>();

  constructor(private readonly sink: FeedSink) {}

  /** The coordinator holding provider `id`, as the feeds last said. */
  ownerOf(id: string): string | undefined {
    return this.owners.get(id);
  }

  coordinators(): string[] {
    return [...this.feeds.keys()];
  }

  /** Anything heard from `c` proves it alive. */
  heard(c: string, now: number): void {
    const feed = this.feeds.get(c);
    if (feed) feed.heard = now;
  }

  /** A message on `c`'s feed: a delta numbered `seq`, or (without `delta`) a beat repeating the last number. */
  feed(c: string, seq: number, delta: Directory | undefined, now: number): void {
    let feed = this.feeds.get(c);
    if (!feed) {
      this.feeds.set(c, (feed = { seq: 0, synced: false, heard: now, asked: now }));
      this.sink.ask(c);
      return;
    }
    feed.heard = now;
    if (!feed.synced) {
      if (now - feed.asked >= ASK_AGAIN_MS) this.resync(c, feed, now);
      return;
    }
    if (delta === undefined ? seq !== feed.seq : seq > feed.seq + 1) return this.resync(c, feed, now);
    // a delta the snapshot already holds
    if (delta === undefined || seq <= feed.seq) return;
    feed.seq = seq;
    this.apply(c, delta);
  }

  /** One part of `c`'s whole directory, sent to this gateway when it asked; `seq` is the feed's number it holds. */
  snapshot(c: string, seq: number, part: Directory, now: number): void {
    let feed = this.feeds.get(c);
    if (!feed) this.feeds.set(c, (feed = { seq, synced: false, heard: now, asked: now }));
    feed.heard = now;
    if (part.reset) feed.parts = [];
    if (!feed.parts) return;
    feed.parts.push(...part.put);
    if (part.more) return;
    const put = feed.parts;
    feed.parts = undefined;
    feed.seq = seq;
    feed.synced = true;
    const now_ = new Set(put.map((e) => e.id));
    const gone = [...this.owners].filter(([id, owner]) => owner === c && !now_.has(id)).map(([id]) => id);
    for (const id of gone) this.owners.delete(id);
    for (const e of put) this.owners.set(e.id, c);
    this.sink.emit({ t: "directory", put, gone });
  }

  /** Coordinator `c` is gone (quiet, or no longer answering): its providers leave the copy. */
  forget(c: string): void {
    if (!this.feeds.delete(c)) return;
    const gone = [...this.owners].filter(([, owner]) => owner === c).map(([id]) => id);
    for (const id of gone) this.owners.delete(id);
    if (gone.length > 0) this.sink.emit({ t: "directory", put: [], gone });
  }

  /** Forgets every coordinator not heard from for `quietMs`; returns them. */
  quiet(now: number, quietMs: number): string[] {
    const silent = [...this.feeds].filter(([, feed]) => now - feed.heard > quietMs).map(([c]) => c);
    for (const c of silent) this.forget(c);
    return silent;
  }

  /** The link is down: nothing is known until the snapshots come again. */
  clear(): void {
    this.feeds.clear();
    this.owners.clear();
  }

  private resync(c: string, feed: Feed, now: number): void {
    feed.synced = false;
    feed.asked = now;
    this.sink.ask(c);
  }

  private apply(c: string, delta: Directory): void {
    for (const e of delta.put) this.owners.set(e.id, c);
    // a provider that moved to another coordinator is not gone because its old one says so
    const gone = delta.gone.filter((id) => this.owners.get(id) === c);
    for (const id of gone) this.owners.delete(id);
    if (delta.put.length > 0 || gone.length > 0) this.sink.emit({ t: "directory", put: delta.put, gone });
  }
}
