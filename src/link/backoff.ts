// Reconnect delays with "full jitter": a random wait up to an exponentially growing cap, so a fleet of
// agents that lost the coordinator together does not come back in one stampede.

export class Backoff {
  private attempt = 0;

  constructor(
    private readonly baseMs = 250,
    private readonly maxMs = 10_000,
    private readonly random: () => number = Math.random,
  ) {}

  next(): number {
    const cap = Math.min(this.maxMs, this.baseMs * 2 ** this.attempt);
    this.attempt = Math.min(this.attempt + 1, 30);
    return Math.round(cap / 2 + (this.random() * cap) / 2);
  }

  reset(): void {
    this.attempt = 0;
  }
}
