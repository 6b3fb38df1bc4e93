// The load generator: chat completions over keep-alive HTTP/1.1, closed-loop at a fixed concurrency, timing
// each request whole (non-stream) or its first content token and the gaps between tokens (stream).
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
export async function closedLoopOver(clients: LoadClient[], body: Record<string, unknown>, options: LoopOptions): Promise<RunResult> {
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

export class LoadClient {
  private readonly agent: Agent;

  constructor(private readonly target: Target, maxSockets: number) {
    this.agent = new Agent({ keepAlive: true, maxSockets });
  }

  /** One chat completion; resolves with its timings (never rejects: a failure is a sample with ok false). */
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
          let ttftMs: number | undefined;
          let last = 0;
          let done = false;
          const gapsMs: number[] = [];
          let usage: Usage | undefined;
          const parser = sseParser((data) => {
            if (data === "[DONE]") return void (done = true);
            usage = usageIn(data) ?? usage;
            if (!hasContent(data)) return;
            const now = performance.now();
            if (ttftMs === undefined) ttftMs = now - started;
            else gapsMs.push(now - last);
            last = now;
          });
          let tail = "";
          res.on("data", (d: string) => {
            tail = (tail + d).slice(-400);
            parser.feed(d);
          });
          res.on("end", () => (done ? resolve({ ms: performance.now() - started, ok: true, ttftMs, gapsMs, usage }) : fail(`stream ended without [DONE]: ${tail}`)));
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
