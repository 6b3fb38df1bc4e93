// The agent's links to its coordinators, run on a thread of their own (docs/architecture.md "Faults"). The main
// thread runs the sessions, and node-llama-cpp does some of that work synchronously: resolving a model's chat
// template at its load held the event loop for 1.4 s on a quiet 2-core VM and for 4 to 6 s at a load average of 12,
// in one call. The beats waited behind it, and live agents were dropped at their first session. On this thread the
// link reads, writes and beats on time however long the main thread is held. Its beats vouch for the main thread
// only while that has turned its event loop within MAIN_STALL_ALLOWED_MS: a process that is stopped or killed is
// found out within the link's bounds as before, and one whose main thread is stuck for good a little later.
import type { Worker } from "node:worker_threads";
import type { Connection, LinkClosed, LinkEvents } from "../../src/link/link.ts";
import { coordinatorUrls } from "../../src/link/ws-url.ts";
import { startWorker } from "../../src/process/worker.ts";
import type { FromAgent, ToAgent } from "../../src/wire/agent.ts";

/**
 * The longest the main thread may hold its event loop and still be vouched for: as long as a session may go
 * without a frame at the gateway (its idle deadline, 30 s by default), so a main thread stuck any longer has failed
 * its session there anyway. The 6 s that model loading took at load 12 fit five times over.
 */
export const MAIN_STALL_ALLOWED_MS = 30_000;
/** How often the main thread tells the link thread it is turning (one message, no other work). */
export const PULSE_MS = 1_000;
/**
 * Messages of one link that may wait for its socket: a session that outruns its link waits for it (an honest one
 * never does; one frame holds up to 64 KiB of pieces), so an endless answer is not piled up here.
 */
export const MAX_UNSENT = 32;

/** What a link is started with: LinkOptions less what cannot cross threads (the reader is the agent's, there). */
export interface ThreadLinkOptions {
  url: string;
  path: string;
  maxPayload: number;
  heartbeatMs: number;
  idleHeartbeatMs?: number;
  askEvery?: number;
  /** The reconnect backoff's first cap and its largest, ms. */
  backoff: [baseMs: number, maxMs: number];
  bearer?: string;
}

export type ToLinkThread =
  | { t: "start"; link: number; options: ThreadLinkOptions }
  /** What the main thread sent in one tick, in order: one write on the socket, as on one thread. */
  | { t: "send"; batch: [link: number, conn: number, message: FromAgent][] }
  | { t: "busy"; link: number; on: boolean }
  | { t: "reset-backoff"; link: number }
  | { t: "stop-reconnecting"; link: number }
  | { t: "close"; link: number; code?: number; reason?: string; waitMs?: number }
  | { t: "pulse" };

export type FromLinkThread =
  | { t: "open"; link: number; conn: number; url: string }
  | { t: "message"; link: number; conn: number; message: ToAgent | undefined }
  | { t: "closed"; link: number; info: LinkClosed }
  /** This many of the link's messages went onto its socket (or were dropped with their connection). */
  | { t: "sent"; link: number; count: number }
  | { t: "close-done"; link: number };

/** The one thread of this process's links, started with the first and ended with the last. */
class LinkThread {
  private readonly worker: Worker;
  private readonly pulse: NodeJS.Timeout;
  private readonly links = new Map<number, ThreadLink>();
  private batch: [number, number, FromAgent][] = [];

  constructor() {
    this.worker = startWorker(import.meta.url, "link-worker", { workerData: { stallAllowedMs: MAIN_STALL_ALLOWED_MS } });
    // the links keep this process alive only through what owns them (the daemon, its signal handlers)
    this.worker.unref();
    this.worker.on("message", (message: FromLinkThread) => this.links.get(message.link)?.receive(message));
    this.worker.on("error", (err) => this.fail(err.message));
    this.worker.on("exit", (code) => this.fail(`it exited (${code})`));
    this.pulse = setInterval(() => this.post({ t: "pulse" }), PULSE_MS);
    this.pulse.unref();
  }

  add(id: number, link: ThreadLink): void {
    this.links.set(id, link);
  }

  remove(id: number): void {
    this.links.delete(id);
    if (this.links.size > 0) return;
    this.end();
    void this.worker.terminate();
  }

  /** Anything sent before it goes first, so the thread sees every call in the order the daemon made it. */
  post(message: ToLinkThread): void {
    this.flush();
    this.worker.postMessage(message);
  }

  send(link: number, conn: number, message: FromAgent): void {
    if (this.batch.length === 0) process.nextTick(() => this.flush());
    this.batch.push([link, conn, message]);
  }

  private flush(): void {
    if (this.batch.length > 0) this.worker.postMessage({ t: "send", batch: this.batch.splice(0) } satisfies ToLinkThread);
  }

  private fail(why: string): void {
    if (!this.end()) return;
    for (const link of [...this.links.values()]) link.lost(`the link thread failed: ${why}`);
  }

  /** False when it had ended already. */
  private end(): boolean {
    if (thread !== this) return false;
    thread = undefined;
    clearInterval(this.pulse);
    return true;
  }
}

let thread: LinkThread | undefined;
let nextId = 0;

/** How a lost thread's links try again, as a dropped connection does at first. */
const RETHREAD_MS = 250;

/** Link (src/link/link.ts) to the daemon, run on the link thread: the same calls and events, the same order. */
export class ThreadLink {
  private readonly id = nextId++;
  private current?: { conn: number; connection: Connection<FromAgent> };
  private where: string;
  private stopped = false;
  private working = false;
  private closing?: () => void;
  private retry?: NodeJS.Timeout;
  /** Messages handed to the link thread and not yet on the socket, and who waits for them to go. */
  private unsent = 0;
  private waiting: (() => void)[] = [];

  constructor(
    private readonly options: ThreadLinkOptions,
    private readonly events: LinkEvents<ToAgent, FromAgent>,
  ) {
    this.where = coordinatorUrls(options.url)[0]!;
  }

  /** The coordinator the current (or last) connection is to. */
  get url(): string {
    return this.where;
  }

  get connected(): boolean {
    return this.current !== undefined;
  }

  start(): void {
    thread ??= new LinkThread();
    thread.add(this.id, this);
    thread.post({ t: "start", link: this.id, options: this.options });
    if (this.working) thread.post({ t: "busy", link: this.id, on: true });
  }

  send(message: FromAgent): boolean {
    if (!this.current) return false;
    this.current.connection.send(message);
    return true;
  }

  /** Undefined while the socket keeps up; else settles once most of what was sent is on it (or the connection is gone). */
  congestion(): Promise<void> | undefined {
    if (this.unsent <= MAX_UNSENT) return undefined;
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  busy(on: boolean): void {
    this.working = on;
    thread?.post({ t: "busy", link: this.id, on });
  }

  resetBackoff(): void {
    thread?.post({ t: "reset-backoff", link: this.id });
  }

  stopReconnecting(): void {
    this.stopped = true;
    clearTimeout(this.retry);
    thread?.post({ t: "stop-reconnecting", link: this.id });
  }

  /** Closes for good, as Link.close does; resolves once the link thread has. */
  async close(options: { code?: number; reason?: string; waitMs?: number } = {}): Promise<void> {
    this.stopReconnecting();
    const on = thread;
    if (!on) return;
    const done = new Promise<void>((resolve) => (this.closing = resolve));
    on.post({ t: "close", link: this.id, ...options });
    await done;
  }

  /** A message from the link thread about this link. */
  receive(message: FromLinkThread): void {
    if (message.t === "open") {
      const { conn } = message;
      this.where = message.url;
      const connection: Connection<FromAgent> = {
        send: (m) => {
          if (this.current?.conn !== conn || !thread) return;
          this.unsent++;
          thread.send(this.id, conn, m);
        },
      };
      this.current = { conn, connection };
      this.events.open?.(connection);
    } else if (message.t === "message") {
      if (this.current?.conn === message.conn) this.events.message(message.message, this.current.connection);
    } else if (message.t === "sent") {
      this.unsent = Math.max(0, this.unsent - message.count);
      if (this.unsent <= MAX_UNSENT / 4) this.release();
    } else if (message.t === "closed") {
      this.current = undefined;
      this.release();
      this.events.closed?.(message.info);
    } else this.finish();
  }

  /** Nothing more waits on the socket: every session held up by it goes on. */
  private release(): void {
    if (this.current === undefined) this.unsent = 0;
    for (const resolve of this.waiting.splice(0)) resolve();
  }

  /** The link thread is gone: this link's connection with it, and it starts again on a new one. */
  lost(error: string): void {
    const wasOpen = this.current !== undefined;
    this.current = undefined;
    this.release();
    if (this.closing) return this.finish();
    const retryMs = this.stopped ? undefined : RETHREAD_MS;
    this.events.closed?.({ code: 1006, reason: "", error, wasOpen, ...(retryMs === undefined ? {} : { retryMs }) });
    if (retryMs !== undefined) this.retry = setTimeout(() => this.start(), retryMs);
  }

  private finish(): void {
    thread?.remove(this.id);
    const resolve = this.closing;
    this.closing = undefined;
    resolve?.();
  }
}
