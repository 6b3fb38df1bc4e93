// The peer's processes for bench section 4: the mock OpenAI upstream (bench/mock-upstream.ts) and the open-source
// Portkey gateway (@portkey-ai/gateway, its own Node server entry) in front of it, both real processes on 127.0.0.1.
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { TSX, type Proc } from "../harness/process.ts";
import { LoadClient, type Target } from "./load.ts";
import { startBenchProcess } from "./procs.ts";

const MOCK_SCRIPT = fileURLToPath(new URL("./mock-upstream.ts", import.meta.url));
const PRELOAD = fileURLToPath(new URL("./peer-preload.mjs", import.meta.url));
const PORTKEY_DIR = fileURLToPath(new URL("../node_modules/@portkey-ai/gateway/", import.meta.url));
/** The package's bin (`npx @portkey-ai/gateway`): a Hono app on @hono/node-server. */
const PORTKEY_SERVER = `${PORTKEY_DIR}build/start-server.js`;

export interface Peer {
  proc: Proc;
  /** Where the load generator sends the peer's requests, with the headers that route them to the mock. */
  target: Target;
  version: string;
}

/** The mock upstream in its own process, so its CPU is read apart from the gateway's and the load generator's. */
export async function startUpstreamProcess(dir: string): Promise<{ proc: Proc; url: string }> {
  const proc = startBenchProcess(dir, "peer-upstream", MOCK_SCRIPT, [], {}, TSX);
  const url = (await proc.waitFor(/mock upstream at (http:\/\/\S+)/, 60_000))[1]!;
  return { proc, url };
}

/**
 * Portkey in front of the mock: `x-portkey-provider: openai` with `x-portkey-custom-host` sends a request to any
 * OpenAI-compatible base URL (loopback is on its trusted-host list by default). Resolves with why not when it
 * is not installed, does not start, or cannot answer one request each way; the bench then goes on without it.
 */
export async function startPortkey(dir: string, upstreamUrl: string, body: Record<string, unknown>): Promise<Peer | { why: string }> {
  if (!existsSync(PORTKEY_SERVER)) return { why: "@portkey-ai/gateway is not installed (npm install)" };
  const version = (JSON.parse(readFileSync(`${PORTKEY_DIR}package.json`, "utf8")) as { version: string }).version;
  // --port=0: any free port, which the preload prints; --headless: no log UI or its log stream
  const proc = startBenchProcess(dir, "peer-portkey", PORTKEY_SERVER, ["--port=0", "--headless"], {}, ["--import", PRELOAD]);
  let client: LoadClient | undefined;
  try {
    const port = (await proc.waitFor(/peer-preload: listening on 127\.0\.0\.1:(\d+)/, 30_000))[1]!;
    const target: Target = {
      url: `http://127.0.0.1:${port}`,
      key: "sk-mock-upstream",
      model: "mock",
      headers: { "x-portkey-provider": "openai", "x-portkey-custom-host": `${upstreamUrl}/v1` },
    };
    client = new LoadClient(target, 1);
    for (const stream of [false, true]) {
      let why = "";
      const sample = await client.chat(body, stream, (w) => (why = w));
      if (!sample.ok) throw new Error(`Portkey ${version} could not answer a ${stream ? "stream" : "non-stream"} request: ${why}`);
    }
    return { proc, target, version };
  } catch (err) {
    const log = proc.stdout().split("\n").filter((l) => /error/i.test(l)).slice(-2).join(" / ");
    await proc.stop();
    return { why: `${(err as Error).message.split("\n")[0]}${log ? ` (its log: ${log.slice(0, 300)})` : ""}` };
  } finally {
    client?.close();
  }
}
