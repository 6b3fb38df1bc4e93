// A streamed answer on the caller's HTTP response (SPEC §3): the events as src/openai/sse-text.ts frames them, a
// `: keepalive` comment after every quiet interval, and nothing written once the caller has gone.
import { once } from "node:events";
import type { ServerResponse } from "node:http";
import { DEFAULT_KEEPALIVE_MS, DONE_LINE, KEEPALIVE_LINE, sseData, sseEvent } from "../../src/openai/sse-text.ts";

export class SseWriter {
  private readonly keepalive: NodeJS.Timeout;

  /** Writes and flushes the head at once: SPEC §3 wants it out before a provider is chosen. */
  constructor(
    private readonly res: ServerResponse,
    keepaliveMs: number = DEFAULT_KEEPALIVE_MS,
    headers: Record<string, string> = {},
  ) {
    res.writeHead(200, {
      ...headers,
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      // proxies such as nginx would otherwise hold the tokens back
      "x-accel-buffering": "no",
    });
    res.flushHeaders();
    // one timer, pushed back by every write, so a keepalive goes out only after a quiet interval
    this.keepalive = setInterval(() => this.write(KEEPALIVE_LINE), keepaliveMs);
    res.once("close", () => clearInterval(this.keepalive));
  }

  get open(): boolean {
    return !this.res.destroyed && !this.res.writableEnded;
  }

  /** Sends one event (named, as the Responses API names its events); resolves once the socket can take more, so a slow reader slows the stream down. */
  async send(value: unknown, event?: string): Promise<void> {
    if (this.write(sseEvent(value, event))) return;
    if (this.open) await Promise.race([once(this.res, "drain"), once(this.res, "close")]);
  }

  /** Ends a successful stream with `data: [DONE]`. */
  done(): void {
    this.write(DONE_LINE);
    this.end();
  }

  /** Ends a failed stream: the error envelope as the last event, and no `[DONE]` (SPEC §3). */
  fail(envelope: unknown): void {
    this.write(sseData(envelope));
    this.end();
  }

  private write(text: string): boolean {
    if (!this.open) return true;
    this.keepalive.refresh();
    return this.res.write(text);
  }

  /** Ends a stream with no closing line (the Responses API's last event says it is over). */
  end(): void {
    clearInterval(this.keepalive);
    if (this.open) this.res.end();
  }
}
