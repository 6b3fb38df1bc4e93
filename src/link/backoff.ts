// Reconnect delays with "full jitter": a random wait anywhere from zero up to a cap that doubles with each
// failed attempt, so a fleet of agents that lost the coordinator together spreads its returns over the whole
// window instead of arriving in one stampede (AWS, "Exponential Backoff And Jitter": full jitter does the
// least total work of the schemes compared there).

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
    return Math.round(this.random() * cap);
  }

  reset(): void {
    this.attempt = 0;
  }
}
