// A session's deadlines (DESIGN §8): its first frame within `firstTokenMs` of the provider starting it (time in
// the queue counts apart, under the coordinator's --max-queued-ms), no gap longer than `idleMs` between frames,
// and the whole session within `totalMs`. Plain arithmetic on one clock; whoever keeps the timer asks it when.

export interface SessionDeadlines {
  firstTokenMs: number;
  idleMs: number;
  totalMs: number;
}

/** Room for an 8B model's first load from disk, a slow machine's pauses, and a long answer at a few tokens a second. */
export const DEFAULT_SESSION_DEADLINES: SessionDeadlines = { firstTokenMs: 120_000, idleMs: 30_000, totalMs: 900_000 };

/** When, on the session's clock (ms), the provider started it and last sent a frame; both unset while it waits in the queue. */
export interface SessionTimes {
  started?: number;
  lastFrame?: number;
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/** The next deadline the session must meet, and what missing it means; undefined while it is queued. */
export function nextDeadline(deadlines: SessionDeadlines, times: SessionTimes): { at: number; breach: string } | undefined {
  if (times.started === undefined) return undefined;
  const total = { at: times.started + deadlines.totalMs, breach: `did not finish within ${seconds(deadlines.totalMs)} of starting the session` };
  const gap =
    times.lastFrame === undefined
      ? { at: times.started + deadlines.firstTokenMs, breach: `sent no token within ${seconds(deadlines.firstTokenMs)} of starting the session` }
      : { at: times.lastFrame + deadlines.idleMs, breach: `sent nothing for ${seconds(deadlines.idleMs)} mid-session` };
  return gap.at < total.at ? gap : total;
}
