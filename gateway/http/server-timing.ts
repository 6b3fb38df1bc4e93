// W3C Server-Timing for one request (what browsers' dev tools and `curl -v` show): named durations in ms, as a
// header and as an object (a stream's stop chunk carries the part not known when its head went out). Each
// mark costs a performance.now(), so it is always on.

/** auth: the key check; route: choosing a provider; queue: waiting in its queue; seal: sealing the request;
 * provider: the agent's time to first token; verify: checking the receipt; total: the whole request so far. */
export type TimingName = "auth" | "route" | "queue" | "seal" | "provider" | "verify" | "total";

const ORDER: readonly TimingName[] = ["auth", "route", "queue", "seal", "provider", "verify", "total"];
const round = (ms: number) => Math.round(ms * 100) / 100;

export class ServerTiming {
  private readonly durations = new Map<TimingName, number>();

  constructor(private readonly started: number = performance.now()) {}

  /** Adds to a duration (a re-routed request routes and seals more than once). */
  add(name: Exclude<TimingName, "total">, ms: number): void {
    this.durations.set(name, (this.durations.get(name) ?? 0) + Math.max(0, ms));
  }

  /** Times a synchronous step. */
  time<T>(name: Exclude<TimingName, "total">, step: () => T): T {
    const start = performance.now();
    try {
      return step();
    } finally {
      this.add(name, performance.now() - start);
    }
  }

  /** Every duration known so far, and `total` up to now, in ms. */
  object(now: number = performance.now()): Partial<Record<TimingName, number>> {
    const out: Partial<Record<TimingName, number>> = {};
    for (const name of ORDER) {
      const ms = name === "total" ? now - this.started : this.durations.get(name);
      if (ms !== undefined) out[name] = round(ms);
    }
    return out;
  }

  /** The `Server-Timing` header value: `auth;dur=0.12, route;dur=0.3, …, total;dur=4.5`. */
  header(now?: number): string {
    return Object.entries(this.object(now))
      .map(([name, ms]) => `${name};dur=${ms}`)
      .join(", ");
  }
}
