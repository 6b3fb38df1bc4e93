// When the auditor audits a provider (issue 43 item 2, design §4 "Pacing"): after each ordinary placement on it, with
// probability 1/rate (Bernoulli, never every rate-th, so no count reveals the audit), and besides at least once per
// floor: its next audit falls due U(floor/2, floor) after its last (or after it was first seen), and is taken at its
// next ordinary placement, so a provider fed only audits is never audited. Each audit waits an Exp(mean) delay before
// it is sent, so it does not follow the placement that drew it. Plain bookkeeping on a given clock and dice.

import { BoundedMap } from "../../src/bounded-map.ts";

export interface AuditPacing {
  /** One audit in this many ordinary placements, on average (`--audit-rate`). */
  rate: number;
  /** At least one audit per provider within this (`--audit-floor`), ms. */
  floorMs: number;
  /** Mean of the exponential delay before an audit is sent, ms. */
  delayMeanMs: number;
}

export const DEFAULT_AUDIT_PACING: AuditPacing = { rate: 200, floorMs: 60 * 60_000, delayMeanMs: 20_000 };

export interface Dice {
  now(): number;
  /** Uniform in [0, 1). */
  random(): number;
}

export const REAL_DICE: Dice = { now: () => Date.now(), random: Math.random };

/** How many providers' due times are kept: past it the one seen longest ago is forgotten (it is due afresh when seen). */
const MAX_PROVIDERS = 10_000;

export class AuditScheduler {
  /** Each provider's next due time for the floor's audit. */
  private readonly due = new BoundedMap<string, number>(MAX_PROVIDERS);

  constructor(
    readonly pacing: AuditPacing = DEFAULT_AUDIT_PACING,
    private readonly dice: Dice = REAL_DICE,
  ) {}

  /**
   * An ordinary session was placed on `provider`: the delay (ms) after which to audit it, or undefined for no audit.
   * A provider first seen is due within the floor from now.
   */
  placed(provider: string): number | undefined {
    const now = this.dice.now();
    const due = this.due.get(provider);
    if (due === undefined) {
      this.due.set(provider, this.nextDue(now));
      return this.drawn() ? this.delay() : undefined;
    }
    if (due <= now || this.drawn()) {
      // counted as the floor's audit too: the next one falls due from now
      this.due.set(provider, this.nextDue(now));
      return this.delay();
    }
    return undefined;
  }

  /** The floor's next audit of `provider` after one at `at`: U(floor/2, floor) later. */
  private nextDue(at: number): number {
    return at + this.pacing.floorMs * (0.5 + 0.5 * this.dice.random());
  }

  private drawn(): boolean {
    return this.dice.random() < 1 / this.pacing.rate;
  }

  private delay(): number {
    // 1 − U is in (0, 1], so the log is finite
    return -Math.log(1 - this.dice.random()) * this.pacing.delayMeanMs;
  }
}
