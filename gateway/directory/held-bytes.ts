// What the gateway holds for its sessions in flight (issue 41): each one's frames that arrived and its caller has not
// taken yet (unread), and the answer it has passed on, kept for the receipt check and the answer's last shape. The
// answer has its bound per session already (answer-bounds.ts: the provider's, charged past it). Unread frames are
// the caller's doing: past `unreadPerSession` the caller is treated as gone. Over all sessions the two together stay
// within `total`: past it the session holding the most is ended, as Envoy's overload manager resets the streams that
// hold the most buffer. That frees the most and falls on the biggest holder, where refusing new sessions (503) would
// turn away callers who hold little and leave the memory held. Plain bookkeeping: whoever opens a count says what
// ending its session does.

export const MIB = 1024 * 1024;

export interface HeldLimits {
  /** Unread bytes one session may hold for its caller. */
  unreadPerSession: number;
  /** Bytes all sessions together may hold, unread and kept. */
  total: number;
}

/**
 * 4 MiB unread is some 40,000 tokens sent and not read (an honest token's frame costs about 100 bytes here): more
 * than the context an agent gives a session by default. 256 MiB is 64 such callers, or 16 answers at the largest
 * answer bound (16 MiB of text at 131,072 tokens), which only a provider sending its longest tokens reaches.
 */
export const DEFAULT_HELD_LIMITS: HeldLimits = { unreadPerSession: 4 * MIB, total: 256 * MIB };

/** What a relayed message costs held beyond its sealed bytes: its object, its strings' headers, its slot in the queue (about 120 measured). */
export const HELD_BYTES_PER_MESSAGE = 128;

/** Which bound ended a session, and what it held then. */
export interface Cut {
  bound: "unread" | "total";
  unread: number;
  kept: number;
}

/** One session's bytes held, within the ledger's bounds. */
export class HeldCount {
  unread = 0;
  kept = 0;
  /** Set once this session was cut: it holds nothing and counts nothing more. */
  cut?: Cut;
  /** Out of the ledger (closed or cut): whatever comes later is not counted. */
  released = false;

  constructor(
    private readonly ledger: HeldLedger,
    /** Runs when the session is cut, its bytes already released. */
    readonly onCut: (cut: Cut) => void,
  ) {}

  get bytes(): number {
    return this.unread + this.kept;
  }

  /** A message arrived for the caller; past a bound, this session (or the one holding the most) is cut before this returns. */
  arrived(bytes: number): void {
    if (this.released) return;
    this.unread += bytes;
    this.ledger.rose(this, bytes);
  }

  /** The caller took a message. */
  taken(bytes: number): void {
    if (this.released) return;
    const taken = Math.min(bytes, this.unread);
    this.unread -= taken;
    this.ledger.fell(taken);
  }

  /** Answer text passed on and kept for the receipt check. */
  keep(bytes: number): void {
    if (this.released) return;
    this.kept += bytes;
    this.ledger.rose(this, bytes);
  }

  /** The session is over: what it held is no longer counted. */
  close(): void {
    this.ledger.release(this);
  }
}

export class HeldLedger {
  private held = 0;
  private readonly counts = new Set<HeldCount>();

  constructor(readonly limits: HeldLimits = DEFAULT_HELD_LIMITS) {}

  /** Bytes held for all sessions now. */
  get bytes(): number {
    return this.held;
  }

  open(onCut: (cut: Cut) => void): HeldCount {
    const count = new HeldCount(this, onCut);
    this.counts.add(count);
    return count;
  }

  /** For HeldCount: `count` rose by `bytes`; past a bound a session is cut. */
  rose(count: HeldCount, bytes: number): void {
    this.held += bytes;
    if (count.unread > this.limits.unreadPerSession) return this.cut(count, "unread");
    // the biggest holds at least the average, so one cut is enough unless the total is below what one session holds
    while (this.held > this.limits.total && this.counts.size > 0) this.cut(this.biggest(), "total");
  }

  /** For HeldCount: the caller took `bytes`. */
  fell(bytes: number): void {
    this.held -= bytes;
  }

  /** For HeldCount: the count leaves the ledger. */
  release(count: HeldCount): void {
    if (!this.counts.delete(count)) return;
    this.held -= count.bytes;
    count.unread = 0;
    count.kept = 0;
    count.released = true;
  }

  /** Linear in the sessions in flight, and only once the total is crossed. */
  private biggest(): HeldCount {
    let biggest!: HeldCount;
    for (const count of this.counts) if (biggest === undefined || count.bytes > biggest.bytes) biggest = count;
    return biggest;
  }

  private cut(count: HeldCount, bound: Cut["bound"]): void {
    const cut: Cut = { bound, unread: count.unread, kept: count.kept };
    this.release(count);
    count.cut = cut;
    count.onCut(cut);
  }
}
