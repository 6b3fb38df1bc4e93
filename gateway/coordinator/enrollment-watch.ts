// Revocation reaches connected agents within seconds, not at their next challenge: one timer asks the key store
// which enrollments are live (one small query, whatever the number of agents) and ends each link whose
// enrollment is no longer among them.

/** How often the live enrollments are read: a revoked provider is gone within this plus a tick's work. */
export const ENROLLMENT_CHECK_MS = 1_000;

export class EnrollmentWatch {
  private readonly watched = new Map<symbol, { enrollment: string; onRevoked: () => void }>();
  private readonly timer: NodeJS.Timeout;
  private checking = false;

  constructor(
    /** The ids of the enrollments live now (neither revoked nor expired). */
    private readonly live: () => Promise<ReadonlySet<string>>,
    private readonly onError: (err: unknown) => void,
    checkMs = ENROLLMENT_CHECK_MS,
  ) {
    this.timer = setInterval(() => void this.check(), checkMs).unref();
  }

  /** Calls `onRevoked` once, when `enrollment` stops being live; the returned function stops watching. */
  watch(enrollment: string, onRevoked: () => void): () => void {
    const key = Symbol(enrollment);
    this.watched.set(key, { enrollment, onRevoked });
    return () => this.watched.delete(key);
  }

  /** One pass: exported for tests, which drive it without the timer. */
  async check(): Promise<void> {
    if (this.watched.size === 0 || this.checking) return;
    this.checking = true;
    try {
      const live = await this.live();
      for (const [key, { enrollment, onRevoked }] of this.watched) {
        if (live.has(enrollment)) continue;
        this.watched.delete(key);
        onRevoked();
      }
    } catch (err) {
      // a store that cannot be read says nothing about revocation: the links stay, the next pass asks again
      this.onError(err);
    } finally {
      this.checking = false;
    }
  }

  stop(): void {
    clearInterval(this.timer);
    this.watched.clear();
  }
}
