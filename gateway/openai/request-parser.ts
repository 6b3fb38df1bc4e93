// Where every OpenAI route's body is parsed (issue 41, DESIGN §10). A small body with no schema is parsed on the
// event loop, where handing it over would cost more than its parse; every other body goes to a small pool of worker
// threads, so neither a big body's JSON.parse nor a hostile schema's step budget is spent on the loop other callers
// and the coordinator's links share. Admission (the queues' caps) reads the body's model and pin between its JSON
// parse and its costly parse. Bodies wait their turn by tenant, each key and each user within a share of its own.
import { availableParallelism } from "node:os";
import type { Worker } from "node:worker_threads";
import type { Catalog } from "../../src/catalog.ts";
import { ApiError, type ErrorCode } from "../../src/errors.ts";
import { startWorker } from "../../src/process/worker.ts";
import type { CacheInputs } from "../../src/openai/cache-fields.ts";
import type { Completion } from "../../src/openai/chat-request.ts";
import { readJsonBody } from "../../src/openai/json-body.ts";
import { carriesSchema, parseRoute, peekRoute, type RoutePeek, type RouteRequest } from "../../src/openai/route-request.ts";
import { type RouteKind } from "../../src/openai/route-kinds.ts";
import type { ReasoningFormat } from "../../src/openai/tools-request.ts";
import { FairQueue } from "./fair-queue.ts";

/** Bodies up to this size with no schema are parsed in place: about a tenth of a millisecond of JSON.parse. */
export const IN_PLACE_MAX_BYTES = 64 * 1024;

/** How many bodies may wait for a worker before a tenant that already has one waiting is refused 503 overloaded. */
export const MAX_WAITING_PARSES = 64;

/** Each key's and each user's share of the pool: bodies waiting or being parsed, past which it gets 429. */
export const DEFAULT_PARSE_SHARES = { perKey: 16, perUser: 32 };
export type ParseShares = typeof DEFAULT_PARSE_SHARES;

/** How long close() waits for the workers to end. */
const TERMINATE_WAIT_MS = 1_000;

/** Whose body it is: the key's share, and the tenant whose turn it waits for (its user, or an operator key). */
export interface Tenant {
  key: string;
  user: string;
}

/** What a body is read with besides the catalog: the gateway's nonce and the caller's receipt nonce. */
export interface ParseInputs {
  nonce: string;
  receiptNonce: string | string[] | undefined;
  /** With `--audit`: the fresh seed a complete request seals where the caller set none. */
  complete?: Completion | undefined;
}

/** Admission before the costly parse: throws to refuse (503 overloaded), else returns the cache's names to seal. */
export type Admit = (peek: RoutePeek) => CacheInputs;

export type ToWorker =
  /** A body already read and admitted: parse it. */
  | { type: "parse"; id: number; kind: RouteKind; body: unknown; inputs: ParseInputs & CacheInputs }
  /** A body's bytes: read them, answer with the peek, and hold the body for the verdict. */
  | { type: "read"; id: number; kind: RouteKind; bytes: Uint8Array; inputs: ParseInputs }
  | { type: "admitted"; id: number; cache: CacheInputs }
  | { type: "refused"; id: number };

export type FromWorker =
  | { type: "peek"; id: number; peek: RoutePeek }
  | { type: "request"; id: number; request: RouteRequest }
  | { type: "error"; id: number; error: { code: ErrorCode; message: string; param: string | null } };

interface Pending {
  tenant: Tenant;
  job: Extract<ToWorker, { type: "parse" | "read" }>;
  admit: Admit;
  signal: AbortSignal;
  resolve: (request: RouteRequest) => void;
  reject: (err: unknown) => void;
}

/** One worker and the job it runs. */
interface Slot {
  worker: Worker;
  running?: Pending;
}

export class RequestParser {
  private readonly slots: Slot[] = [];
  private readonly waiting = new FairQueue<Pending>();
  /** Bodies each key, and each user, has waiting or being parsed. */
  private readonly held = new Map<string, number>();
  private nextId = 0;
  private closed = false;
  /** Bodies a worker answered; tests use it to see the hand-off. */
  workerAnswers = 0;

  constructor(
    private readonly catalog: Catalog,
    private readonly reasoningFormat: ReasoningFormat,
    /** Worker threads: one on a 2-core machine, at most 2. 0 parses everything in place. */
    private readonly size = Math.max(1, Math.min(2, availableParallelism() - 1)),
    private readonly shares: ParseShares = DEFAULT_PARSE_SHARES,
  ) {
    // started now, so the first request with a schema does not wait for a worker to load
    for (let i = 0; i < size; i++) this.spawn();
  }

  /** The route's request for these bytes: read, admitted by `admit`, then parsed, off the event loop when it costs. */
  async parse(kind: RouteKind, bytes: Uint8Array, inputs: ParseInputs, tenant: Tenant, admit: Admit, signal: AbortSignal): Promise<RouteRequest> {
    const inPlace = this.size === 0 || this.closed;
    if (inPlace || bytes.length <= IN_PLACE_MAX_BYTES) {
      const body = readJsonBody(bytes);
      const cache = admit(peekRoute(body));
      if (inPlace || !carriesSchema(kind, body)) return this.parseHere(kind, body, { ...inputs, ...cache });
      return this.enqueue({ type: "parse", id: this.nextId++, kind, body, inputs: { ...inputs, ...cache } }, tenant, admit, signal);
    }
    return this.enqueue({ type: "read", id: this.nextId++, kind, bytes, inputs }, tenant, admit, signal);
  }

  private enqueue(job: Pending["job"], tenant: Tenant, admit: Admit, signal: AbortSignal): Promise<RouteRequest> {
    signal.throwIfAborted();
    if (this.count(tenant.key) >= this.shares.perKey) {
      throw new ApiError("rate_limited", `This API key already has ${this.shares.perKey} request bodies waiting to be checked, its share; retry when one has been answered.`, { retryAfterS: 1 });
    }
    if (this.count(tenant.user) >= this.shares.perUser) {
      throw new ApiError("rate_limited", `This key's user already has ${this.shares.perUser} request bodies waiting to be checked over all their keys, their share; retry when one has been answered.`, { retryAfterS: 1 });
    }
    // a tenant with nothing waiting always gets a place: a flood of others never shuts it out
    if (this.waiting.size >= MAX_WAITING_PARSES && this.waiting.waiting(tenant.user) > 0) {
      throw new ApiError("overloaded", `The gateway is at capacity: ${this.waiting.size} request bodies are waiting to be checked; retry after the Retry-After interval.`);
    }
    return new Promise<RouteRequest>((resolve, reject) => {
      const pending: Pending = { tenant, job, admit, signal, resolve, reject };
      this.hold(tenant, 1);
      const settle = (done: () => void) => {
        this.hold(tenant, -1);
        done();
      };
      pending.resolve = (request) => settle(() => resolve(request));
      pending.reject = (err) => settle(() => reject(err));
      // a caller who hangs up while its body waits leaves the line; one being parsed finishes within its budget
      signal.addEventListener("abort", () => {
        if (this.waiting.remove(tenant.user, pending)) pending.reject(signal.reason);
      }, { once: true });
      this.waiting.push(tenant.user, pending);
      this.pump();
    });
  }

  private count(name: string): number {
    return this.held.get(name) ?? 0;
  }

  private hold({ key, user }: Tenant, n: number): void {
    for (const name of key === user ? [key] : [key, user]) {
      const left = this.count(name) + n;
      if (left > 0) this.held.set(name, left);
      else this.held.delete(name);
    }
  }

  private pump(): void {
    while (this.waiting.size > 0) {
      const slot = this.slots.find((s) => s.running === undefined) ?? (this.slots.length < this.size ? this.spawn() : undefined);
      if (slot === undefined) return;
      const pending = (slot.running = this.waiting.shift()!);
      const { job } = pending;
      // the bytes move to the worker rather than being copied, when they own their whole buffer
      const owned = job.type === "read" && job.bytes.byteOffset === 0 && job.bytes.byteLength === job.bytes.buffer.byteLength;
      slot.worker.postMessage(job, owned ? [job.bytes.buffer as ArrayBuffer] : []);
    }
  }

  /** The parse on this thread: small bodies with no schema, and everything once the pool is closed. */
  private parseHere(kind: RouteKind, body: unknown, inputs: ParseInputs & CacheInputs): RouteRequest {
    return parseRoute(kind, body, { catalog: this.catalog, reasoningFormat: this.reasoningFormat, ...inputs });
  }

  private spawn(): Slot {
    const workerData = { catalog: this.catalog, reasoningFormat: this.reasoningFormat };
    const worker = startWorker(import.meta.url, "parse-worker", { workerData });
    worker.unref();
    const slot: Slot = { worker };
    this.slots.push(slot);
    worker.on("message", (answer: FromWorker) => this.answered(slot, answer));
    // a worker that fails takes only the job it ran; the next job gets a fresh one
    worker.on("error", (err) => {
      this.slots.splice(this.slots.indexOf(slot), 1);
      slot.running?.reject(err);
      slot.running = undefined;
      if (!this.closed) this.pump();
    });
    return slot;
  }

  private answered(slot: Slot, answer: FromWorker): void {
    const pending = slot.running;
    if (pending === undefined || pending.job.id !== answer.id) return;
    if (answer.type === "peek") {
      // admission between the body's JSON parse and its costly parse, as for a body parsed in place
      try {
        pending.signal.throwIfAborted();
        slot.worker.postMessage({ type: "admitted", id: answer.id, cache: pending.admit(answer.peek) } satisfies ToWorker);
        return;
      } catch (err) {
        slot.worker.postMessage({ type: "refused", id: answer.id } satisfies ToWorker);
        pending.reject(err);
      }
    } else {
      this.workerAnswers++;
      if (answer.type === "request") pending.resolve(answer.request);
      else pending.reject(new ApiError(answer.error.code, answer.error.message, { param: answer.error.param }));
    }
    slot.running = undefined;
    this.pump();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const pending of this.waiting.drain()) pending.reject(new ApiError("shutting_down", "The gateway is shutting down; send the request to another gateway or retry shortly."));
    const terminated = Promise.all(this.slots.splice(0).map((s) => s.worker.terminate()));
    // a worker still loading its modules (a gateway stopped as soon as it is ready, on a loaded machine) hears
    // terminate() only once it runs JavaScript: shutdown does not wait on it longer than this, and the exit ends it
    await Promise.race([terminated, new Promise((resolve) => setTimeout(resolve, TERMINATE_WAIT_MS).unref())]);
  }
}
