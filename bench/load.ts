// The load generator: chat completions over keep-alive HTTP/1.1 (or through a fetch, such as the client's sealed one),
// closed-loop at a fixed concurrency, timing each request whole (non-stream) or its first content token and the gaps
// between tokens (stream).
import { Agent, request } from "node:http";
import { hasContent, sseParser } from "../harness/sse.ts";

export interface Sample {
  /** Whole request, ms. */
  ms: number;
  ok: boolean;
  /** Stream only: arrival to first content delta, ms. */
  ttftMs?: number;
  /** Stream only: gaps between content deltas, ms. */
  gapsMs?: number[];
  /** The answer's `usage`, as the body or the stream's last chunk gave it. */
  usage?: Usage;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number };
}

/** The `usage` a JSON text carries, if any (read only where it is named, so the hot loop parses nothing more). */
const usageIn = (text: string): Usage | undefined => (text.includes('"usage"') ? (JSON.parse(text) as { usage?: Usage }).usage : undefined);

export interface Target {
  url: string;
  key: string;
  model?: string;
  /** Sent with every request besides authorization, e.g. the Portkey peer's routing headers. */
  headers?: Record<string, string>;
}

export interface RunResult {
  samples: Sample[];
  elapsedMs: number;
  errors: number;
  /** The first failure's status and body, for the report. */
  firstError?: string;
}

export interface LoopOptions {
  concurrency: number;
  durationMs?: number;
  requests?: number;
  stream?: boolean;
}

/**
 * `concurrency` callers, each sending its next request as soon as the last one is answered, to the clients in
 * turn (request by request, as a round-robin load balancer spreads them over gateways).
 */
export async function closedLoopOver(clients: ChatClient[], body: Record<string, unknown>, options: LoopOptions): Promise<RunResult> {
  const samples: Sample[] = [];
  let firstError: string | undefined;
  const started = performance.now();
  const deadline = options.durationMs === undefined ? Infinity : started + options.durationMs;
  let budget = options.requests ?? Infinity;
  let turn = 0;
  const worker = async () => {
    while (performance.now() < deadline && budget-- > 0) {
      const client = clients[turn++ % clients.length]!;
      samples.push(await client.chat(body, options.stream ?? false, (why) => (firstError ??= why)));
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  return { samples, elapsedMs: performance.now() - started, errors: samples.filter((s) => !s.ok).length, firstError };
}

/** What sends one chat completion and times it. */
export interface ChatClient {
  /** Resolves with the request's timings (never rejects: a failure is a sample with ok false). */
  chat(body: Record<string, unknown>, stream: boolean, onError?: (why: string) => void): Promise<Sample>;
}

/** A stream's timings as its text arrives: the first content delta, the gaps after it, its usage and its [DONE]. */
class StreamTimer {
  private ttftMs?: number;
  private last = 0;
  private readonly gapsMs: number[] = [];
  private usage?: Usage;
  done = false;
  private readonly parser = sseParser((data) => {
    if (data === "[DONE]") return void (this.done = true);
    this.usage = usageIn(data) ?? this.usage;
    if (!hasContent(data)) return;
    const now = performance.now();
    if (this.ttftMs === undefined) this.ttftMs = now - this.started;
    else this.gapsMs.push(now - this.last);
    this.last = now;
  });

  constructor(private readonly started: number) {}

  feed(text: string): void {
    this.parser.feed(text);
  }

  sample(): Sample {
    return { ms: performance.now() - this.started, ok: true, ttftMs: this.ttftMs, gapsMs: this.gapsMs, usage: this.usage };
  }
}

export class LoadClient implements ChatClient {
  private readonly agent: Agent;

  constructor(private readonly target: Target, maxSockets: number) {
    this.agent = new Agent({ keepAlive: true, maxSockets });
  }

  chat(body: Record<string, unknown>, stream: boolean, onError?: (why: string) => void): Promise<Sample> {
    const payload = JSON.stringify({ ...(this.target.model ? { model: this.target.model } : {}), ...body, stream });
    const started = performance.now();
    return new Promise((resolve) => {
      const fail = (why: string) => {
        onError?.(why);
        resolve({ ms: performance.now() - started, ok: false });
      };
      const req = request(
        `${this.target.url}/v1/chat/completions`,
        {
          method: "POST",
          agent: this.agent,
          headers: { ...this.target.headers, authorization: `Bearer ${this.target.key}`, "content-type": "application/json", "content-length": Buffer.byteLength(payload) },
        },
        (res) => {
          res.setEncoding("utf8");
          if (!stream) {
            let text = "";
            res.on("data", (d: string) => (text += d));
            res.on("end", () => (res.statusCode === 200 ? resolve({ ms: performance.now() - started, ok: true, usage: usageIn(text) }) : fail(`${res.statusCode} ${text.slice(0, 300)}`)));
            return;
          }
          const timer = new StreamTimer(started);
          let tail = "";
          res.on("data", (d: string) => {
            tail = (tail + d).slice(-400);
            timer.feed(d);
          });
          res.on("end", () => (timer.done ? resolve(timer.sample()) : fail(`stream ended without [DONE]: ${tail}`)));
        },
      );
      req.on("error", (err) => fail(err.message));
      req.end(payload);
    });
  }

  /** `concurrency` callers, each sending its next request as soon as the last one is answered. */
  closedLoop(body: Record<string, unknown>, options: LoopOptions): Promise<RunResult> {
    return closedLoopOver([this], body, options);
  }

  close(): void {
    this.agent.destroy();
  }
}

/** Chat completions through a fetch: the runtime's own, or one that wraps it (createSealedFetch). */
export class FetchClient implements ChatClient {
  constructor(
    private readonly target: Target,
    private readonly send: typeof globalThis.fetch,
  ) {}

  async chat(body: Record<string, unknown>, stream: boolean, onError?: (why: string) => void): Promise<Sample> {
    const started = performance.now();
    const fail = (why: string): Sample => {
      onError?.(why);
      return { ms: performance.now() - started, ok: false };
    };
    try {
      const res = await this.send(`${this.target.url}/v1/chat/completions`, {
        method: "POST",
        headers: { ...this.target.headers, authorization: `Bearer ${this.target.key}`, "content-type": "application/json" },
        body: JSON.stringify({ ...(this.target.model ? { model: this.target.model } : {}), ...body, stream }),
      });
      if (!stream || res.status !== 200 || res.body === null) {
        const text = await res.text();
        return res.status === 200 ? { ms: performance.now() - started, ok: true, usage: usageIn(text) } : fail(`${res.status} ${text.slice(0, 300)}`);
      }
      const timer = new StreamTimer(started);
      const decoder = new TextDecoder();
      for await (const chunk of res.body) timer.feed(decoder.decode(chunk, { stream: true }));
      return timer.done ? timer.sample() : fail("stream ended without [DONE]");
    } catch (err) {
      return fail((err as Error).message);
    }
  }

  closedLoop(body: Record<string, unknown>, options: LoopOptions): Promise<RunResult> {
    return closedLoopOver([this], body, options);
  }
}
