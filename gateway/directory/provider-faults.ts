// A provider's faults as this gateway saw them (DESIGN §8): an answer past its bounds, a missed deadline, a call
// to a tool not offered, an error it made up, a broken frame or receipt. They are charged to what the provider
// cannot make anew (issue 41): the enrollment the coordinator admitted it under and, at the hardware rung, its device,
// never only its key, so a rested machine that reconnects with fresh keys stays rested. After `threshold` of them
// within `windowMs` those rest out of rotation for `restMs`, with every provider that carries them: unpinned requests
// go elsewhere. A failed audit (issue 43, gateway/audit/) bars them instead: out of rotation until an operator
// clears it, pinned or not, charged the same way. Plain bookkeeping on a given clock.
import type { DirectoryEntry } from "../../src/wire/gateway.ts";

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

/** What of a provider its faults are charged by: its id, the enrollment the coordinator vouches for, its device serial. */
export type FaultSubject = Pick<DirectoryEntry, "id" | "enrollment" | "serial">;

/** What a provider's faults are charged to: its enrollment (its own id when it has none) and, at the hardware rung, its device. */
export function faultIdentities(entry: FaultSubject): string[] {
  const enrollment = `enrollment:${entry.enrollment ?? `provider:${entry.id}`}`;
  return entry.serial === undefined ? [enrollment] : [enrollment, `serial:${entry.serial}`];
}

export class ProviderFaults {
  private readonly recent = new Map<string, number[]>();
  private readonly restingUntil = new Map<string, number>();
  /** The providers the directory lists now under each identity, and each one as it was listed. */
  private readonly providersOf = new Map<string, Set<string>>();
  private readonly listedAs = new Map<string, FaultSubject>();
  /** Identities barred by a failed audit, each with that audit's id: the store's (syncBars) and this gateway's own. */
  private bars = new Map<string, string>();
  /** This gateway's own bars the store has not yet shown back: kept whatever a sync says, so a slow write bars at once. */
  private readonly pending = new Map<string, string>();

  constructor(readonly policy: FaultPolicy = DEFAULT_FAULT_POLICY) {}

  /** Charges one fault to the provider's identities at `now`; returns how many faults sent them to rest, when this one did. */
  charge(provider: FaultSubject, now: number): number | undefined {
    let rested: number | undefined;
    for (const identity of faultIdentities(provider)) {
      const since = now - this.policy.windowMs;
      const times = (this.recent.get(identity) ?? []).filter((t) => t > since);
      times.push(now);
      if (times.length < this.policy.threshold) {
        this.recent.set(identity, times);
        continue;
      }
      this.recent.delete(identity);
      this.restingUntil.set(identity, now + this.policy.restMs);
      rested = Math.max(rested ?? 0, times.length);
    }
    return rested;
  }

  /** Bars the provider's identities for the failed audit `auditId`: permanent, so fresh keys on the same enrollment or device do not help. */
  bar(provider: FaultSubject, auditId: string): void {
    for (const identity of faultIdentities(provider)) {
      if (this.bars.has(identity)) continue;
      this.bars.set(identity, auditId);
      this.pending.set(identity, auditId);
    }
  }

  /**
   * The bars as the store every replica shares holds them (identity → failed audit), replacing those read before: a
   * bar an operator cleared is lifted. This gateway's own bars stay until the store has returned their audit's row in
   * any state (`returned`, the ids read this pass): once it has, the store's word is the bar, cleared or not.
   */
  syncBars(stored: ReadonlyMap<string, string>, returned: ReadonlySet<string> = new Set()): void {
    const shown = new Set([...stored.values(), ...returned]);
    for (const [identity, audit] of this.pending) if (shown.has(audit)) this.pending.delete(identity);
    this.bars = new Map(stored);
    for (const [identity, audit] of this.pending) if (!this.bars.has(identity)) this.bars.set(identity, audit);
  }

  /** The failed audit that bars provider `id` (as listed, else by its id alone), if any. */
  barOf(id: string): string | undefined {
    for (const identity of faultIdentities(this.subjectOf(id))) {
      const audit = this.bars.get(identity);
      if (audit !== undefined) return audit;
    }
    return undefined;
  }

  /** Every listed provider a failed audit bars, with that audit's id. */
  barred(): Map<string, string> {
    const out = new Map<string, string>();
    for (const [identity, audit] of this.bars) for (const id of this.providersOf.get(identity) ?? []) if (!out.has(id)) out.set(id, audit);
    return out;
  }

  /** The providers resting at `now`: every one the directory lists under a resting identity (rests that are over are forgotten). */
  resting(now: number): string[] {
    const ids = new Set<string>();
    for (const [identity, until] of this.restingUntil) {
      if (until <= now) this.restingUntil.delete(identity);
      else for (const id of this.providersOf.get(identity) ?? []) ids.add(id);
    }
    return [...ids];
  }

  /** What the directory says of its providers, as the copy applies it: new or changed entries, and those gone. */
  listed({ reset, put, gone }: { reset?: true; put: readonly DirectoryEntry[]; gone: readonly string[] }): void {
    if (reset) this.forgetProviders();
    for (const { id, enrollment, serial } of put) {
      this.unlist(id);
      const subject = { id, ...(enrollment === undefined ? {} : { enrollment }), ...(serial === undefined ? {} : { serial }) };
      this.listedAs.set(id, subject);
      for (const identity of faultIdentities(subject)) {
        let ids = this.providersOf.get(identity);
        if (ids === undefined) this.providersOf.set(identity, (ids = new Set()));
        ids.add(id);
      }
    }
    for (const id of gone) this.unlist(id);
  }

  /** Provider `id` as the directory last listed it, to charge it by; only its id when it is not listed. */
  subjectOf(id: string): FaultSubject {
    return this.listedAs.get(id) ?? { id };
  }

  /** The directory is unknown (its link is down): nothing is listed until the next whole one. */
  forgetProviders(): void {
    this.providersOf.clear();
    this.listedAs.clear();
  }

  private unlist(id: string): void {
    const subject = this.listedAs.get(id);
    if (subject === undefined) return;
    for (const identity of faultIdentities(subject)) {
      const ids = this.providersOf.get(identity);
      ids?.delete(id);
      if (ids?.size === 0) this.providersOf.delete(identity);
    }
    this.listedAs.delete(id);
  }
}
