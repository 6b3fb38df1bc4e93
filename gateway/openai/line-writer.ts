// A gateway-blind answer on the caller's HTTP response (DESIGN §10): the relay's lines (src/blind/lines.ts), a
// keepalive line after every quiet interval, and nothing written once the caller has gone. The head goes out with
// the first line: until a candidate takes the session, the gateway's failures are ordinary JSON envelopes. A whole
// answer (no stream) is written at once, head to end, so it arms no keepalive.
import { once } from "node:events";
import type { ServerResponse } from "node:http";
import { SEALED_FRAMES_TYPE } from "../../src/blind/format.ts";
import { lineText, type RelayLine } from "../../src/blind/lines.ts";

export class LineWriter {
  private keepalive?: NodeJS.Timeout;

  constructor(
    private readonly res: ServerResponse,
    /** None for a whole answer, whose lines all leave with the head. */
    private readonly keepaliveMs: number | undefined,
    private readonly headers: Record<string, string> = {},
  ) {}

  get started(): boolean {
    return this.res.headersSent;
  }

  private get open(): boolean {
    return !this.res.destroyed && !this.res.writableEnded;
  }

  /** Writes one line (the head first); resolves once the socket can take more, so a slow reader slows the relay. */
  async send(line: RelayLine): Promise<void> {
    if (!this.started) this.head();
    if (this.write(lineText(line))) return;
    if (this.open) await Promise.race([once(this.res, "drain"), once(this.res, "close")]);
  }

  end(): void {
    clearInterval(this.keepalive);
    if (this.open) this.res.end();
  }

  private head(): void {
    this.res.writeHead(200, { ...this.headers, "content-type": SEALED_FRAMES_TYPE, "cache-control": "no-cache", "x-accel-buffering": "no" });
    if (this.keepaliveMs === undefined) return;
    this.keepalive = setInterval(() => this.write(lineText({ type: "keepalive" })), this.keepaliveMs);
    this.res.once("close", () => clearInterval(this.keepalive));
  }

  private write(text: string): boolean {
    if (!this.open) return true;
    this.keepalive?.refresh();
    return this.res.write(text);
  }
}
