// `npm start`: the whole service on this machine: gateway and embedded coordinator in this process, and one
// `svc-agent start` as a child process. The agent serves the catalog's models when they are downloaded, and
// otherwise a tiny random-weight demo model, saying so plainly; then it prints a working curl and SDK example.
import { Command } from "commander";
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { DEFAULT_DATA_DIR } from "../src/process/data-dir.ts";
import { requireSupportedNode } from "../src/process/node-support.ts";
import { onShutdownSignal } from "../src/process/shutdown.ts";
import type { ReadyLine } from "../src/process/ready-line.ts";
import { parseOperatorKeys } from "../gateway/keys/auth.ts";
import { serve } from "../gateway/start.ts";
import { loadCatalog } from "../src/catalog.ts";
import { port } from "../src/process/cli-options.ts";
import { DEMO_ALIAS, writeDemoCatalog } from "../tiny-model/demo.ts";

// nothing above loads a native module, so this is the first thing that can fail on an unsupported Node
requireSupportedNode("npm start");

const AGENT_BIN = fileURLToPath(new URL("../bin/svc-agent.js", import.meta.url));

const opts = new Command("npm start")
  .option("--host <host>", "address to listen on", "127.0.0.1")
  .option("--port <port>", "gateway port", port, 8080)
  .option("--coordinator-port <port>", "coordinator port", port, 8081)
  .option("--data-dir <dir>", "state and models", DEFAULT_DATA_DIR)
  .parse()
  .opts<{ host: string; port: number; coordinatorPort: number; dataDir: string }>();

const keys = parseOperatorKeys(process.env.SVC_OPERATOR_KEYS);
const key = keys[0] ?? `sk-svc_op_${randomBytes(24).toString("base64url")}`;
const modelsDir = join(opts.dataDir, "models");
const bundled = loadCatalog();
const real = bundled.models.filter((m) => existsSync(join(modelsDir, m.file))).map((m) => m.alias);
// without a downloaded model, a tiny random-weight qwen3 written on the spot stands in (about 440 kB)
const demo = real.length === 0 ? writeDemoCatalog(opts.dataDir) : undefined;

let running: Awaited<ReturnType<typeof serve>> | undefined;
let agent: ChildProcess | undefined;
let enrollment: { id: string; secret: string } | undefined;
let stopping = false;

/** Stops what this run started: the agent first (it leaves the directory), then the gateway. */
async function stopAll(): Promise<void> {
  stopping = true;
  if (agent && agent.exitCode === null && agent.signalCode === null) {
    const exited = once(agent, "exit");
    agent.kill("SIGTERM");
    await exited;
  }
  // the token was this run's agent's alone: left live, it would admit any machine that read it for a day
  if (enrollment) await running?.revokeProvider(enrollment.id);
  await running?.close();
}

// a signal, or the end of whatever started this run (npm may exit on SIGTERM without passing it on)
const stop = onShutdownSignal(stopAll);

try {
  running = await serve({
    host: opts.host,
    port: opts.port,
    coordinatorPort: opts.coordinatorPort,
    catalogPath: demo?.catalogPath,
    floor: "process",
    dataDir: join(opts.dataDir, "gateway"),
    operatorKeys: keys.length > 0 ? keys : [key],
    logger: pino({ base: undefined, timestamp: pino.stdTimeFunctions.isoTime }),
  });
  // the demo enrolls its own agent, as an operator would with `svc-gateway providers enroll`
  enrollment = await running.enrollProvider("npm start agent", Date.now() + 24 * 3_600_000);
  // doctor takes the same flags as start, so the line printed below checks exactly this agent
  const agentFlags = ["--coordinator", running.coordinatorUrl, "--data-dir", opts.dataDir, "--models-dir", demo?.modelsDir ?? modelsDir, ...(demo ? ["--catalog", demo.catalogPath] : [])];
  // the IPC channel is how the agent notices this process is gone, however it ended
  const child = spawn(process.execPath, [AGENT_BIN, "start", ...agentFlags], {
    stdio: ["ignore", "pipe", "inherit", "ipc"],
    env: { ...process.env, SVC_PROVIDER_TOKEN: enrollment.secret },
  });
  agent = child;
  const providerLine = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d: Buffer) => {
      process.stdout.write(d);
      out += d.toString();
      // the agent's ready line (docs/operator-guide.md "The ready line"), not its banner
      const lines = out.slice(0, out.lastIndexOf("\n")).split("\n").filter((l) => l.startsWith("{"));
      const ready = lines.map((l) => JSON.parse(l) as ReadyLine).find((l) => l.ready === "svc-agent start");
      if (ready?.ready !== "svc-agent start") return;
      resolve(`${ready.provider} (separate process, ${ready.rung} rung) advertising [${ready.aliases.join(", ")}]`);
    });
    child.once("exit", (code, signal) => reject(new Error(`the agent exited with ${code ?? signal} before it joined`)));
  });
  // an agent that dies later leaves a gateway with nothing to serve: the whole run ends, and says so
  child.once("exit", (code, signal) => {
    if (stopping) return;
    console.error(`npm start: the agent exited with ${code ?? signal}; stopping`);
    process.exitCode = 1;
    stop();
  });
  const model = demo ? DEMO_ALIAS : (real[0] ?? bundled.default);
  const base = `${running.url}/v1`;
  const body = JSON.stringify({ model, messages: [{ role: "user", content: "Say hello." }], max_tokens: 64 });
  console.log(
    [
      demo ? "svc is up in DEMO mode: no catalog model is downloaded yet." : "svc is up.",
      "",
      `  gateway      ${base}`,
      `  coordinator  ${running.coordinatorUrl}/v1/catalog`,
      `  provider     ${providerLine}`,
      `  API key      ${key}${keys.length > 0 ? " (from SVC_OPERATOR_KEYS)" : " (generated for this run; set SVC_OPERATOR_KEYS to choose your own)"}`,
      "",
      ...(demo
        ? [
            `The model "${DEMO_ALIAS}" is a tiny random-weight qwen3 that writes random characters: it shows the`,
            "whole path working, not answers. For real answers: npx svc-agent pull qwen3-4b, then npm start again.",
            "",
          ]
        : []),
      "Try it (the key goes in through the environment and stdin, never on a command line, where ps shows it):",
      "",
      `  export SVC_API_KEY=${key}`,
      `  printf 'Authorization: Bearer %s\\n' "$SVC_API_KEY" | curl ${base}/chat/completions -H @- \\`,
      `    -H "Content-Type: application/json" -d '${body}'`,
      "",
      "  # its svc_receipt is signed by the provider: save the answer (add > answer.json) and check it against",
      "  # this gateway's provider listing (without --providers the check can only say UNVERIFIED); it reads SVC_API_KEY",
      `  npx svc-agent verify answer.json --providers ${base}`,
      "",
      "  # the provider's set-up as svc-agent doctor checks it, with the flags this agent was started with",
      `  npx svc-agent doctor ${agentFlags.join(" ")}`,
      "",
      "  # Python: pip install openai",
      "  import os",
      "  from openai import OpenAI",
      `  client = OpenAI(base_url="${base}", api_key=os.environ["SVC_API_KEY"])`,
      `  r = client.chat.completions.create(model="${model}", messages=[{"role": "user", "content": "Say hello."}], max_tokens=64)`,
      "  print(r.choices[0].message.content, r.svc_receipt)",
      "",
      "Ctrl-C stops all three. Logs follow: the gateway's as JSON lines, the agent's as svc-agent lines.",
      "",
    ].join("\n"),
  );
} catch (err) {
  // a gateway left up with no agent would look like a service and serve nothing: stop it, and fail
  console.error(`npm start: ${(err as Error).message}`);
  process.exitCode = 1;
  stop();
}
