// A FIFO counting lock: up to `capacity` holders at a time (the engine's one generation at a time), waiters
// served in arrival order, and a waiter whose signal aborts leaves the
// line at once without holding up the ones behind it.

export type Release = () => void;

interface Waiter {
  grant: (release: Release) => void;
  fail: (reason: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

export class Slots {
  private held = 0;
  private waiters: Waiter[] = [];

  constructor(private readonly capacity = 1) {}

  /** Whether any slot is held. */
  get busy(): boolean {
    return this.held > 0;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  acquire(signal?: AbortSignal): Promise<Release> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.held < this.capacity) {
      this.held++;
      return Promise.resolve(this.releaser());
    }
    return new Promise<Release>((grant, fail) => {
      const waiter: Waiter = { grant, fail, signal };
      if (signal) {
        waiter.onAbort = () => {
          this.waiters = this.waiters.filter((w) => w !== waiter);
          fail(signal.reason);
        };
        signal.addEventListener("abort", waiter.onAbort, { once: true });
      }
      this.waiters.push(waiter);
    });
  }

  private releaser(): Release {
    let released = false;
    return () => {
      if (released) return; // a second call must not release someone else's turn
      released = true;
      const next = this.waiters.shift();
      if (!next) {
        this.held--;
        return;
      }
      if (next.onAbort) next.signal?.removeEventListener("abort", next.onAbort);
      next.grant(this.releaser());
    };
  }
}
