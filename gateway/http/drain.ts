// Graceful shutdown of the gateway's HTTP server: stop accepting, let the requests in flight finish up to a
// deadline, then end the rest with 503 `shutting_down` (a stream gets it as its SPEC §3 mid-stream error).
import type { Server, ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { ApiError } from "../../src/errors.ts";

/** After the deadline, how long the aborted requests get to write their error before sockets are cut. */
const ABORT_FLUSH_MS = 2_000;

export class Drain {
  private readonly active = new Set<AbortController>();
  private onIdle?: () => void;
  private started = false;

  get draining(): boolean {
    return this.started;
  }

  get inFlight(): number {
    return this.active.size;
  }

  /** Tracks a request until its response closes; `controller` is what ends it at the deadline. */
  track(controller: AbortController, res: ServerResponse): void {
    this.active.add(controller);
    res.once("close", () => {
      this.active.delete(controller);
      if (this.active.size === 0) this.onIdle?.();
    });
  }

  async drain(server: Server, graceMs: number): Promise<void> {
    this.started = true;
    server.close();
    server.closeIdleConnections();
    if (!(await this.idleWithin(graceMs))) {
      const reason = new ApiError("shutting_down", `The gateway is shutting down and could not finish this request within ${graceMs} ms; retry it.`);
      for (const controller of this.active) controller.abort(reason);
      await this.idleWithin(ABORT_FLUSH_MS);
    }
    server.closeAllConnections();
  }

  private async idleWithin(ms: number): Promise<boolean> {
    if (this.active.size === 0) return true;
    const idle = new Promise<true>((resolve) => (this.onIdle = () => resolve(true)));
    const timer = new AbortController();
    const result = await Promise.race([idle, sleep(ms, false, { signal: timer.signal }).catch(() => false as const)]);
    timer.abort();
    return result;
  }
}
