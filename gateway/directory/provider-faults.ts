// A provider's faults as this gateway saw them (DESIGN §8): an answer past its bounds, a missed deadline, a call
// to a tool not offered, an error it made up, a broken frame or receipt. After `threshold` of them within
// `windowMs` it rests out of rotation for `restMs`: unpinned requests go elsewhere. Plain bookkeeping on a given clock.

/** What the provider did wrong, for the fault metric: its answer's size, its time, its tools, its word, its frames. */
export const FAULT_KINDS = ["answer_bounds", "deadline", "tool_call", "error", "broken"] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** One fault, as found: its kind and what the provider did, in svc's words (never the provider's). */
export interface Breach {
  kind: FaultKind;
  why: string;
}

export interface FaultPolicy {
  threshold: number;
  windowMs: number;
  restMs: number;
}

export const DEFAULT_FAULT_POLICY: FaultPolicy = { threshold: 3, windowMs: 60_000, restMs: 60_000 };

export class ProviderFaults {
  private readonly recent = new Map<string, number[]>();
  private readonly restingUntil = new Map<string, number>();

  constructor(readonly policy: FaultPolicy = DEFAULT_FAULT_POLICY) {}

  /** Charges one fault at `now`; returns how many faults sent the provider to rest, when this one did. */
  charge(id: string, now: number): number | undefined {
    const since = now - this.policy.windowMs;
    const times = (this.recent.get(id) ?? []).filter((t) => t > since);
    times.push(now);
    if (times.length < this.policy.threshold) {
      this.recent.set(id, times);
      return undefined;
    }
    this.recent.delete(id);
    this.restingUntil.set(id, now + this.policy.restMs);
    return times.length;
  }

  /** The providers resting at `now` (those whose rest is over are forgotten). */
  resting(now: number): string[] {
    for (const [id, until] of this.restingUntil) if (until <= now) this.restingUntil.delete(id);
    return [...this.restingUntil.keys()];
  }
}
