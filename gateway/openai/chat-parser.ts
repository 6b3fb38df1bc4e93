// Where a chat request is parsed: its JSON schemas (response_format, tools' parameters) are worked in a small pool
// of worker threads, so the step budget a hostile schema spends (src/schema/bounds.ts, about 50 ms) is never spent
// on the event loop every other caller's request and the coordinator's links wait on. A body with no schema is
// parsed in place: handing it over would cost more than its parse.
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import type { Catalog } from "../../src/catalog.ts";
import { ApiError, type ErrorCode } from "../../src/errors.ts";
import { parseChatRequest, type ChatRequest } from "./chat-request.ts";
import type { ReasoningFormat } from "./tools-request.ts";

/** Parses waiting for a worker, past which a request is 503 overloaded: each costs at most one step budget. */
export const MAX_WAITING_PARSES = 64;
/** How long close() waits for the workers to end. */
const TERMINATE_WAIT_MS = 1_000;

/** What a body is read with besides the catalog: its nonces and the caller's prompt-cache scope (ChatContext). */
export interface ParseInputs {
  nonce: string;
  receiptNonce: string | string[] | undefined;
  cacheScope?: string;
}

export interface ParseJob extends ParseInputs {
  id: number;
  body: unknown;
}

export type ParseAnswer =
  | { id: number; request: Omit<ChatRequest, "entry"> & { alias: string } }
  | { id: number; error: { code: ErrorCode; message: string; param: string | null } };

interface Pending {
  job: ParseJob;
  resolve: (request: ChatRequest) => void;
  reject: (err: unknown) => void;
}

/** One worker and the job it runs. */
interface Slot {
  worker: Worker;
  running?: Pending;
}

export class ChatParser {
  private readonly slots: Slot[] = [];
  private readonly waiting: Pending[] = [];
  private nextId = 0;
  private closed = false;
  /** Parses a worker answered; tests use it to see the hand-off. */
  workerAnswers = 0;

  constructor(
    private readonly catalog: Catalog,
    private readonly reasoningFormat: ReasoningFormat,
    /** Worker threads: one on a 2-core machine, at most 2. 0 parses everything in place. */
    private readonly size = Math.max(1, Math.min(2, availableParallelism() - 1)),
  ) {
    // started now, so the first request with a schema does not wait for a worker to load
    for (let i = 0; i < size; i++) this.spawn();
  }

  /** parseChatRequest's answer for this body, its schemas worked off the event loop. */
  async parse(body: unknown, inputs: ParseInputs, signal: AbortSignal): Promise<ChatRequest> {
    if (this.size === 0 || this.closed || !carriesSchema(body)) return this.parseHere(body, inputs);
    if (this.waiting.length >= MAX_WAITING_PARSES) {
      throw new ApiError("overloaded", `The gateway is at capacity: ${this.waiting.length} requests' schemas are waiting to be checked; retry after the Retry-After interval.`);
    }
    signal.throwIfAborted();
    return new Promise<ChatRequest>((resolve, reject) => {
      const pending: Pending = { job: { id: this.nextId++, body, ...inputs }, resolve, reject };
      // a caller who hangs up while its parse waits leaves the line; one already running finishes within its budget
      signal.addEventListener("abort", () => {
        const at = this.waiting.indexOf(pending);
        if (at < 0) return;
        this.waiting.splice(at, 1);
        reject(signal.reason);
      }, { once: true });
      this.waiting.push(pending);
      this.pump();
    });
  }

  private pump(): void {
    while (this.waiting.length > 0) {
      const slot = this.slots.find((s) => s.running === undefined) ?? (this.slots.length < this.size ? this.spawn() : undefined);
      if (slot === undefined) return;
      const pending = (slot.running = this.waiting.shift()!);
      try {
        slot.worker.postMessage(pending.job);
      } catch {
        // a body nested too deep to clone: the schema limits' depth check refuses it in place, within a bounded walk
        slot.running = undefined;
        this.inPlace(pending);
      }
    }
  }

  private inPlace({ job, resolve, reject }: Pending): void {
    try {
      const { id: _id, body, ...inputs } = job;
      resolve(this.parseHere(body, inputs));
    } catch (err) {
      reject(err);
    }
  }

  /** The parse on this thread: for bodies with no schema, and for those a worker cannot be handed. */
  private parseHere(body: unknown, inputs: ParseInputs): ChatRequest {
    return parseChatRequest(body, { catalog: this.catalog, reasoningFormat: this.reasoningFormat, ...inputs });
  }

  private spawn(): Slot {
    const workerData = { catalog: this.catalog, reasoningFormat: this.reasoningFormat };
    const worker = import.meta.url.endsWith(".ts") ? sourceWorker(workerData) : new Worker(new URL("./parse-worker.js", import.meta.url), { workerData });
    worker.unref();
    const slot: Slot = { worker };
    this.slots.push(slot);
    worker.on("message", (answer: ParseAnswer) => {
      this.workerAnswers++;
      const pending = slot.running;
      slot.running = undefined;
      if (pending !== undefined && pending.job.id === answer.id) this.settle(pending, answer);
      this.pump();
    });
    // a worker that fails takes only the job it ran; the next job gets a fresh one
    worker.on("error", (err) => {
      this.slots.splice(this.slots.indexOf(slot), 1);
      slot.running?.reject(err);
      slot.running = undefined;
      if (!this.closed) this.pump();
    });
    return slot;
  }

  private settle({ resolve, reject }: Pending, answer: ParseAnswer): void {
    if ("error" in answer) return reject(new ApiError(answer.error.code, answer.error.message, { param: answer.error.param }));
    const { alias, ...request } = answer.request;
    const entry = this.catalog.models.find((m) => m.alias === alias);
    if (entry === undefined) return reject(new Error(`the parse worker resolved the model to ${alias}, which is not in the catalog`));
    resolve({ ...request, entry });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const pending of this.waiting.splice(0)) pending.reject(new ApiError("shutting_down", "The gateway is shutting down; send the request to another gateway or retry shortly."));
    const terminated = Promise.all(this.slots.splice(0).map((s) => s.worker.terminate()));
    // a worker still loading its modules (a gateway stopped as soon as it is ready, on a loaded machine) hears
    // terminate() only once it runs JavaScript: shutdown does not wait on it longer than this, and the exit ends it
    await Promise.race([terminated, new Promise((resolve) => setTimeout(resolve, TERMINATE_WAIT_MS).unref())]);
  }
}

/** The worker from the sources (npm start, the unit tests): it registers tsx for itself, then loads them. */
function sourceWorker(workerData: unknown): Worker {
  // the package's ESM build of tsx's API, beside the CommonJS one require resolves
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx/esm/api").replace(/\.cjs$/, ".mjs")).href;
  const entry = new URL("./parse-worker.ts", import.meta.url).href;
  return new Worker(`import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`, { eval: true, workerData });
}

/** Whether the body holds a schema to work: a response_format schema or a tool's parameters. */
function carriesSchema(body: unknown): boolean {
  if (typeof body !== "object" || body === null) return false;
  const { response_format: format, tools } = body as Record<string, unknown>;
  const schema = (format as { json_schema?: { schema?: unknown } } | null | undefined)?.json_schema?.schema;
  if (typeof schema === "object" && schema !== null) return true;
  return Array.isArray(tools) && tools.some((t) => typeof (t as { function?: { parameters?: unknown } } | null)?.function?.parameters === "object");
}
