// An async mailbox: one side posts messages (or a failure), the other takes them in order, giving up
// when its AbortSignal fires. It turns a socket's callbacks into a loop a session can await.

export class Mailbox<T> {
  private readonly items: T[] = [];
  private failure?: { reason: unknown };
  private wake?: () => void;

  post(item: T): void {
    this.items.push(item);
    this.wake?.();
  }

  /** Every later `take` rejects with `reason` once the posted items are used up. */
  fail(reason: unknown): void {
    this.failure ??= { reason };
    this.wake?.();
  }

  /** Like `fail`, but what was posted and not yet taken is dropped: the session is over, its backlog worthless. */
  failNow(reason: unknown): void {
    this.items.length = 0;
    this.fail(reason);
  }

  async take(signal: AbortSignal): Promise<T> {
    for (;;) {
      signal.throwIfAborted();
      const item = this.items.shift();
      if (item !== undefined) return item;
      if (this.failure) throw this.failure.reason;
      await new Promise<void>((resolve) => {
        const done = () => {
          signal.removeEventListener("abort", done);
          this.wake = undefined;
          resolve();
        };
        this.wake = done;
        signal.addEventListener("abort", done, { once: true });
      });
    }
  }
}
