// OpenAI `stop` on a stream: text that could still begin a stop sequence is held back until it completes one
// (dropped, generation ends) or cannot, so no byte of a stop leaves early. Fed agent/engine/answer/token-text.ts's whole characters.

export interface StopStep {
  /** What may be sent now: never part of a stop, never a character cut in two. */
  text: string;
  /** A stop sequence completed: generation must end, and nothing after `text` is returned. */
  stopped: boolean;
}

export class StopBuffer {
  /** The end of the text so far that begins some stop: not sent yet. */
  private held = "";
  private readonly longest: number;
  /** First UTF-16 unit of every stop: a cheap test of where a partial stop could begin. */
  private readonly starts: Set<number>;

  constructor(private readonly stops: readonly string[]) {
    this.longest = Math.max(...stops.map((stop) => stop.length));
    this.starts = new Set(stops.map((stop) => stop.charCodeAt(0)));
  }

  /** Adds the next decoded text. After `stopped`, the buffer is empty and must not be fed again. */
  push(text: string): StopStep {
    if (text === "") return { text: "", stopped: false };
    const pending = this.held + text;
    // held text is a proper prefix of a stop, so no stop lies wholly inside it: any match involves the new text
    let cut = -1;
    for (const stop of this.stops) {
      const at = pending.indexOf(stop);
      if (at !== -1 && (cut === -1 || at < cut)) cut = at;
    }
    if (cut !== -1) {
      this.held = "";
      return { text: pending.slice(0, cut), stopped: true };
    }
    const keep = this.partialStopAtEnd(pending);
    this.held = pending.slice(pending.length - keep);
    return { text: pending.slice(0, pending.length - keep), stopped: false };
  }

  /** The answer ended without a stop: what was held is plain text after all. */
  flush(): string {
    const rest = this.held;
    this.held = "";
    return rest;
  }

  /** Length of the longest end of `text` that is the beginning (not the whole) of some stop. */
  private partialStopAtEnd(text: string): number {
    for (let start = Math.max(0, text.length - this.longest + 1); start < text.length; start++) {
      if (!this.starts.has(text.charCodeAt(start))) continue;
      const tail = text.slice(start);
      if (this.stops.some((stop) => stop.length > tail.length && stop.startsWith(tail))) return tail.length;
    }
    return 0;
  }
}
