// The time a judging process could hear in (docs/architecture.md "Faults"): a clock that stands still while the
// process itself stalls (a long GC, a machine too starved to run it), so a peer's silence is timed only over the
// time this process could have heard it. The judge's own timer tells it when each tick was due: a tick later than
// its slack is a stall of this process, excused whole; one merely late by a little counts as it is, so a vanished
// peer is not kept longer under load.

/** How long this process stalled, judged by a timer that was due at `due` (a performance.now() time) and runs now. */
export function stallOf(due: number, slackMs: number): number {
  const late = performance.now() - due;
  return late > slackMs ? late : 0;
}

export class AwakeClock {
  private excused = 0;

  /** A tick that was due at `due` runs now: a stall it shows is excused. */
  woke(due: number, slackMs: number): void {
    this.excused += stallOf(due, slackMs);
  }

  /** Now, on this clock: performance.now() less every stall excused so far. */
  now(): number {
    return performance.now() - this.excused;
  }
}
