// A token bucket: up to `capacity` tokens, refilled continuously at `capacity` per `periodMs`. The rate limits
// use it for requests and tokens per minute and for failed sign-in attempts. Time is passed in, never read.

export class TokenBucket {
  private level: number;
  private at: number;

  constructor(
    private capacity: number,
    private readonly periodMs: number,
    now: number,
  ) {
    this.level = capacity;
    this.at = now;
  }

  get limit(): number {
    return this.capacity;
  }

  /** Tokens now; below zero after a debit larger than what was left (a tokens-per-minute receipt). */
  available(now: number): number {
    this.refill(now);
    return this.level;
  }

  /** What x-ratelimit-remaining reports: the same as `available`. */
  remaining(now: number): number {
    return this.available(now);
  }

  /** Takes `n` tokens whether or not they are there: callers decide first, then take. */
  take(n: number, now: number): void {
    this.refill(now);
    this.level -= n;
  }

  /** Milliseconds until at least `level` tokens are there; 0 when they already are. */
  msUntil(level: number, now: number): number {
    const missing = level - this.available(now);
    return missing <= 0 ? 0 : Math.ceil((missing * this.periodMs) / this.capacity);
  }

  /** Milliseconds until the bucket is full again: OpenAI's `x-ratelimit-reset-*`. */
  msUntilFull(now: number): number {
    return this.msUntil(this.capacity, now);
  }

  /** A new limit for a bucket in use (an override was set): what was taken stays taken. */
  resize(capacity: number, now: number): void {
    if (capacity === this.capacity) return;
    this.refill(now);
    this.capacity = capacity;
    this.level = Math.min(this.level, capacity);
  }

  private refill(now: number): void {
    // a clock that steps back refills nothing rather than draining the bucket
    const elapsed = Math.max(0, now - this.at);
    this.level = Math.min(this.capacity, this.level + (elapsed * this.capacity) / this.periodMs);
    this.at = Math.max(this.at, now);
  }
}
