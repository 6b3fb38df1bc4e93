// The one reconnecting WebSocket link to a coordinator, used by the agent daemon and the gateway's
// coordinator client: connect, read each message with the protocol's reader, beat for the link's liveness (this
// end is the one that pings, src/link/heartbeat.ts), and reconnect with jittered backoff whenever the connection drops
// (to the next coordinator, when it was given several).
import { setTimeout as sleep } from "node:timers/promises";
import { WebSocket } from "ws";
import { Backoff } from "./backoff.ts";
import { HANDSHAKE_TIMEOUT_MS, keepAlive, type KeepAlive } from "./heartbeat.ts";
import { jsonSender } from "./ws-send.ts";
import { coordinatorUrls, wsUrl } from "./ws-url.ts";

export interface LinkOptions<In> {
  /** The coordinator's http(s) URL, or several, comma-separated: a connection that drops moves to the next. */
  url: string;
  /** The WebSocket path on it (`/v1/agent`, `/v1/gateway`). */
  path: string;
  /** Reads one message the peer sent: undefined for anything it may not send. */
  read(data: unknown): In | undefined;
  maxPayload: number;
  /** The ping interval while busy (see `busy`), and always without `idleHeartbeatMs`. */
  heartbeatMs: number;
  /** The longer ping interval while not busy (an agent with no session), when the link has one. */
  idleHeartbeatMs?: number;
  /** The coordinator is asked for an answer once silent this many idle intervals (default 1: every beat asks; src/link/heartbeat.ts). */
  askEvery?: number;
  /** Whether the owner is alive by its own measure (src/link/heartbeat.ts): no beat goes out while it is not. */
  alive?: () => boolean;
  backoff?: Backoff;
  /** The credential the coordinator admits this link by (`Authorization: Bearer …` on the upgrade). */
  bearer?: string;
}

/** One connection of the link: sends on it stop working once it closes, so nothing leaks onto the next. */
export interface Connection<Out> {
  /** `sent`, when given, runs once the message is on the socket, or once it is dropped. */
  send(message: Out, sent?: () => void): void;
}

export interface LinkClosed {
  code: number;
  reason: string;
  /** The socket's own error, or the heartbeat's verdict, when there was one. */
  error?: string;
  /** Whether the connection had opened before it closed. */
  wasOpen: boolean;
  /** When the link tries again; undefined once it is closed for good. */
  retryMs?: number;
}

export interface LinkEvents<In, Out> {
  open?(connection: Connection<Out>): void;
  message(message: In | undefined, connection: Connection<Out>): void;
  closed?(info: LinkClosed): void;
}

export class Link<In, Out> {
  private ws?: WebSocket;
  private connection?: Connection<Out>;
  private stopped = false;
  private retryTimer?: NodeJS.Timeout;
  private readonly backoff: Backoff;
  private heartbeat?: KeepAlive;
  private working = false;
  private readonly urls: string[];
  /** Which of `urls` the current (or next) connection goes to. */
  private at = 0;

  constructor(
    private readonly options: LinkOptions<In>,
    private readonly events: LinkEvents<In, Out>,
  ) {
    this.backoff = options.backoff ?? new Backoff();
    this.urls = coordinatorUrls(options.url);
  }

  /** The coordinator the current (or next) connection is to. */
  get url(): string {
    return this.urls[this.at]!;
  }

  get connected(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  /** Sends on the current connection; false when there is none open. */
  send(message: Out): boolean {
    if (!this.connected || !this.connection) return false;
    this.connection.send(message);
    return true;
  }

  /** No reconnect after the current connection closes (a process that is stopping). */
  stopReconnecting(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
  }

  /**
   * The owner is running work the coordinator watches at the busy heartbeat rate (an agent's session), or no
   * longer: the link beats at `heartbeatMs` while busy, `idleHeartbeatMs` otherwise. Kept across reconnects.
   */
  busy(on: boolean): void {
    this.working = on;
    this.heartbeat?.busy(on);
  }

  /** The next reconnect starts from the shortest delay again (call it once a connection proved good). */
  resetBackoff(): void {
    this.backoff.reset();
  }

  start(): void {
    const { path, maxPayload, heartbeatMs, idleHeartbeatMs, askEvery, alive, bearer } = this.options;
    const url = this.url;
    const headers = bearer === undefined ? undefined : { authorization: `Bearer ${bearer}` };
    const ws = new WebSocket(wsUrl(url, path), { maxPayload, handshakeTimeout: HANDSHAKE_TIMEOUT_MS, headers });
    this.ws = ws;
    const post = jsonSender<Out>(ws);
    let live = true;
    let wasOpen = false;
    let error: string | undefined;
    const heartbeat = keepAlive(ws, { busyMs: heartbeatMs, idleMs: idleHeartbeatMs, askEvery, alive }, () => {
      error = "the coordinator stopped answering heartbeats";
      ws.terminate();
    });
    heartbeat.busy(this.working);
    this.heartbeat = heartbeat;
    const connection: Connection<Out> = {
      send: (message, sent) => {
        if (!live) return sent?.();
        post(message, sent);
        heartbeat.sent();
      },
    };
    this.connection = connection;
    ws.on("open", () => {
      wasOpen = true;
      this.events.open?.(connection);
    });
    ws.on("message", (data) => this.events.message(this.options.read(data), connection));
    ws.on("error", (err) => (error ??= err.message));
    // a refused upgrade (401 on /v1/gateway) says why in its body; ws would report only the status
    ws.on("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => {
        error = `the coordinator refused the link (${res.statusCode}): ${body.trim() || "no reason given"}`;
        ws.terminate();
      });
    });
    ws.on("close", (code, reason) => {
      live = false;
      heartbeat.stop();
      const retryMs = this.stopped ? undefined : this.backoff.next();
      // with several coordinators, the next connection (or attempt) goes to the next one
      this.at = (this.at + 1) % this.urls.length;
      this.events.closed?.({ code, reason: reason.toString(), ...(error === undefined ? {} : { error }), wasOpen, ...(retryMs === undefined ? {} : { retryMs }) });
      if (retryMs !== undefined) this.retryTimer = setTimeout(() => this.start(), retryMs);
    });
  }

  /**
   * Closes for good. With `waitMs`, closes normally and waits that long at most for the close handshake (so
   * frames already sent are flushed before a process exits); without, cuts the socket at once.
   */
  async close(options: { code?: number; reason?: string; waitMs?: number } = {}): Promise<void> {
    this.stopReconnecting();
    const ws = this.ws;
    if (!ws) return;
    if (options.waitMs === undefined || ws.readyState !== WebSocket.OPEN) {
      ws.terminate();
      return;
    }
    const closed = new Promise<void>((resolve) => ws.once("close", () => resolve()));
    ws.close(options.code ?? 1000, options.reason);
    await Promise.race([closed, sleep(options.waitMs, undefined, { ref: false })]);
  }
}
