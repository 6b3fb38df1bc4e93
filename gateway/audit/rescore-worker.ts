// The auditor's reference pass, in a child process (issue 43 item 2, design §6): the gateway never imports agent/, so
// it spawns the package's own `svc-agent rescore` (or `--audit-rescorer CMD`) and talks to it in JSON lines
// (src/audit/rescore-job.ts), one job at a time, at low priority. The child is a stranger too: each line is bounded
// and parsed with zod, a job that takes too long or a child that dies is "no verdict" (never the provider's fault),
// and the next job starts a fresh child.
import { spawn, type ChildProcess } from "node:child_process";
import { setPriority } from "node:os";
import { fileURLToPath } from "node:url";
import { RescoreResultSchema, type RescoreJob, type RescoreResult } from "../../src/audit/rescore-job.ts";

/** The package's own agent bin, beside this file's in the source tree and in dist/ alike. */
export const OWN_AGENT_BIN = fileURLToPath(new URL("../../bin/svc-agent.js", import.meta.url));

/** A result line past this is refused: 32,768 positions of 20 alternatives each fit well within it. */
export const MAX_RESULT_LINE_BYTES = 64 * 1024 * 1024;
export const DEFAULT_RESCORE_TIMEOUT_MS = 10 * 60_000;
/** The reference pass waits for the cores the gateway's callers need (nice 10). */
const NICE = 10;

export interface RescorerOptions {
  /** Program and arguments; the models and threads are appended: `--model alias=PATH … --threads N`. */
  command: readonly string[];
  models: ReadonlyMap<string, string>;
  threads: number;
  /** The gateway's `--catalog`, which the rescorer checks the models' pins against (else its bundled one). */
  catalogPath?: string | undefined;
  timeoutMs?: number;
}

/** The default command: this node running the package's own `svc-agent rescore`. */
export const ownRescorer = (): string[] => [process.execPath, OWN_AGENT_BIN, "rescore"];

/** `--audit-rescorer CMD`: words split on spaces (quote nothing: name a script that takes the arguments). */
export const parseRescorerCommand = (line: string): string[] => line.trim().split(/\s+/).filter((w) => w !== "");

interface Pending {
  job: RescoreJob;
  resolve: (result: RescoreResult) => void;
}

export class RescoreWorker {
  private child: ChildProcess | undefined;
  private readonly queue: Pending[] = [];
  private running: (Pending & { timer: NodeJS.Timeout }) | undefined;
  private buffered: Buffer[] = [];
  private bufferedBytes = 0;
  private closed = false;

  constructor(private readonly options: RescorerOptions) {}

  /** Scores one job; resolves with the child's result, or an `ok: false` one saying why there is none. Never rejects. */
  score(job: RescoreJob): Promise<RescoreResult> {
    if (this.closed) return Promise.resolve(noVerdict(job, "the gateway is shutting down"));
    return new Promise((resolve) => {
      this.queue.push({ job, resolve });
      this.pump();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const pending of this.queue.splice(0)) pending.resolve(noVerdict(pending.job, "the gateway is shutting down"));
    this.fail("the gateway is shutting down");
  }

  private pump(): void {
    if (this.running !== undefined || this.queue.length === 0) return;
    const pending = this.queue.shift()!;
    const child = this.child ?? this.spawn();
    const timer = setTimeout(() => this.fail(`the rescorer took more than ${this.options.timeoutMs ?? DEFAULT_RESCORE_TIMEOUT_MS} ms`), this.options.timeoutMs ?? DEFAULT_RESCORE_TIMEOUT_MS);
    timer.unref();
    this.running = { ...pending, timer };
    child.stdin!.write(`${JSON.stringify(pending.job)}\n`);
  }

  private spawn(): ChildProcess {
    const [program, ...args] = this.options.command;
    const models = [...this.options.models].flatMap(([alias, path]) => ["--model", `${alias}=${path}`]);
    const catalog = this.options.catalogPath === undefined ? [] : ["--catalog", this.options.catalogPath];
    const child = spawn(program!, [...args, ...models, ...catalog, "--threads", String(this.options.threads)], { stdio: ["pipe", "pipe", "ignore"] });
    this.child = child;
    this.buffered = [];
    this.bufferedBytes = 0;
    child.on("spawn", () => {
      try {
        setPriority(child.pid!, NICE);
      } catch {
        // a platform that refuses it runs the pass at normal priority
      }
    });
    child.stdout!.on("data", (chunk: Buffer) => this.read(child, chunk));
    child.stdin!.on("error", () => undefined); // its exit says what happened
    const gone = (why: string) => {
      if (this.child === child) this.fail(why);
    };
    child.on("error", (err) => gone(`the rescorer could not start: ${err.message}`));
    child.on("exit", (code, signal) => gone(`the rescorer exited (${signal ?? `code ${code}`})`));
    return child;
  }

  private read(child: ChildProcess, chunk: Buffer): void {
    if (this.child !== child) return;
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      const line = Buffer.concat([...this.buffered, chunk.subarray(start, nl)]).toString("utf8");
      this.buffered = [];
      this.bufferedBytes = 0;
      start = nl + 1;
      this.answered(line);
      if (this.child !== child) return;
    }
    const rest = chunk.subarray(start);
    this.bufferedBytes += rest.length;
    if (this.bufferedBytes > MAX_RESULT_LINE_BYTES) return this.fail(`the rescorer wrote a line longer than ${MAX_RESULT_LINE_BYTES} bytes`);
    if (rest.length > 0) this.buffered.push(rest);
  }

  private answered(line: string): void {
    const running = this.running;
    if (running === undefined) return this.fail("the rescorer wrote a line with no job running");
    let parsed: ReturnType<typeof RescoreResultSchema.safeParse>;
    try {
      parsed = RescoreResultSchema.safeParse(JSON.parse(line));
    } catch {
      return this.fail("the rescorer wrote a line that is not JSON");
    }
    if (!parsed.success) return this.fail(`the rescorer wrote a result out of shape (${parsed.error.issues[0]?.message ?? "invalid"})`);
    if (parsed.data.id !== running.job.id) return this.fail(`the rescorer answered job ${parsed.data.id}, not ${running.job.id}`);
    clearTimeout(running.timer);
    this.running = undefined;
    running.resolve(parsed.data);
    this.pump();
  }

  /** Ends the child and the running job with no verdict; the next job starts a fresh child. */
  private fail(why: string): void {
    const { child, running } = this;
    this.child = undefined;
    this.running = undefined;
    if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    if (running !== undefined) {
      clearTimeout(running.timer);
      running.resolve(noVerdict(running.job, why));
    }
    if (!this.closed) this.pump();
  }
}

const noVerdict = (job: RescoreJob, error: string): RescoreResult => ({ id: job.id, ok: false, error });
