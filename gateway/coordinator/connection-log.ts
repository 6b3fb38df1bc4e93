// What happens to connections at the coordinator port, logged as counts once per interval rather than lines per
// connection: a flood of connections must not become a flood of log lines. Lines worth reading alone (a refusal and
// its reason) are still written, up to a few per interval; the rest are counted as suppressed.
import type { Logger } from "pino";

export const CONNECTION_LOG_INTERVAL_MS = 10_000;
/** Single lines (refusals, drops) written per interval before the rest are only counted. */
export const DETAIL_LINES_PER_INTERVAL = 20;

export type ConnectionEvent = "opened" | "proven" | "over_cap" | "timed_out" | "closed_unproven";

const EVENTS: readonly ConnectionEvent[] = ["opened", "proven", "over_cap", "timed_out", "closed_unproven"];

export class ConnectionLog {
  private counts = new Map<ConnectionEvent, number>();
  private details = 0;
  private suppressed = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly log: Logger,
    /** Connections pending now (not yet proven), for the interval's line. */
    private readonly pending: () => number,
    private readonly intervalMs = CONNECTION_LOG_INTERVAL_MS,
  ) {
    this.timer = setInterval(() => this.flush(), intervalMs).unref();
  }

  count(event: ConnectionEvent): void {
    this.counts.set(event, (this.counts.get(event) ?? 0) + 1);
  }

  /** One line of its own while this interval has had fewer than DETAIL_LINES_PER_INTERVAL, else only counted. */
  detail(fields: Record<string, unknown>, msg: string): void {
    if (this.details >= DETAIL_LINES_PER_INTERVAL) {
      this.suppressed += 1;
      return;
    }
    this.details += 1;
    this.log.warn(fields, msg);
  }

  /** The interval's one line, when anything happened in it. */
  flush(): void {
    const counts = Object.fromEntries(EVENTS.map((e) => [e, this.counts.get(e) ?? 0]));
    const quiet = EVENTS.every((e) => counts[e] === 0) && this.suppressed === 0;
    this.counts = new Map();
    this.details = 0;
    const suppressed = this.suppressed;
    this.suppressed = 0;
    if (quiet) return;
    this.log.info({ interval_s: this.intervalMs / 1000, ...counts, lines_suppressed: suppressed, pending: this.pending() }, "coordinator connections");
  }

  stop(): void {
    clearInterval(this.timer);
    this.flush();
  }
}
