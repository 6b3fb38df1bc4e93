// The peer's upstream for `npm run bench --only peer`: a tiny OpenAI-compatible server answering
// /v1/chat/completions (JSON and SSE) with the synthetic engine's 16 words, so Portkey and svc do the same work.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import type { ChatMessage } from "../src/session/sealed-request.ts";
import { SyntheticEngine } from "../agent/engine/synthetic-engine.ts";
import { planTurn } from "../agent/engine/turn.ts";

/** The words svc's synthetic agents give; none is paced, as in the overhead's fast case. */
export const MOCK_TOKENS = 16;

interface ChatBody {
  model?: string;
  messages?: ChatMessage[];
  max_tokens?: number;
  stream?: boolean;
}

/** Same engine the svc side runs, so the answer text, token count and finish reason match word for word. */
const engine = new SyntheticEngine({ tokens: MOCK_TOKENS, tokenMs: 0, sha256Of: () => "0".repeat(64) });

async function answer(body: ChatBody, res: ServerResponse): Promise<void> {
  const model = body.model ?? "mock";
  const id = `chatcmpl-mock${Math.random().toString(36).slice(2, 10)}`;
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: Record<string, unknown>, finish_reason: string | null) =>
    `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason }] })}\n\n`;
  const request = { model, messages: body.messages ?? [], max_tokens: body.max_tokens ?? MOCK_TOKENS, temperature: 0 };
  if (body.stream) {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.write(chunk({ role: "assistant", content: "" }, null));
  }
  let content = "";
  for await (const event of engine.generate(planTurn(request))) {
    if (event.type === "delta") {
      if (body.stream) res.write(chunk({ content: event.text }, null));
      else content += event.text;
    } else if (event.type === "done") {
      const usage = { prompt_tokens: event.prompt_tokens, completion_tokens: event.completion_tokens, total_tokens: event.prompt_tokens + event.completion_tokens };
      if (body.stream) return void res.end(`${chunk({}, event.finish_reason)}data: [DONE]\n\n`);
      const message = { role: "assistant", content };
      const json = JSON.stringify({ id, object: "chat.completion", created, model, choices: [{ index: 0, message, finish_reason: event.finish_reason }], usage });
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(json) });
      return void res.end(json);
    }
  }
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
    res.writeHead(404, { "content-type": "application/json" }).end('{"error":{"message":"not found"}}');
    return;
  }
  let text = "";
  req.setEncoding("utf8");
  req.on("data", (d: string) => (text += d));
  req.on("end", () => {
    let body: ChatBody;
    try {
      body = JSON.parse(text) as ChatBody;
    } catch {
      res.writeHead(400, { "content-type": "application/json" }).end('{"error":{"message":"bad JSON"}}');
      return;
    }
    answer(body, res).catch((err: unknown) => res.destroy(err as Error));
  });
}

/** Listens on 127.0.0.1 (port 0: any free one); `url` is the base, without /v1. */
export async function startMockUpstream(port = 0): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer({ keepAliveTimeout: 60_000 }, handle);
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

// run as a script (its own process, so its CPU is read apart from the gateway's and the load generator's)
if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const { url } = await startMockUpstream();
  console.log(`mock upstream at ${url}`);
  process.once("SIGTERM", () => process.exit(0));
}
