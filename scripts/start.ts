// `npm start`: the whole service on this machine: gateway and embedded coordinator in this process, and one
// `svc-agent start` as a child process. The agent serves the catalog's models when they are downloaded, and
// otherwise tiny random-weight demo models (one for chat, one for embeddings), saying so plainly; then it prints an
// example per route that works as printed (scripts/examples.ts). package.json runs it with `exec`, so that npm's
// own pid is this process's parent and a SIGINT npm passes on reaches it (issue 44).
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { requireSupportedNode } from "../src/process/node-support.ts";
import { onShutdownSignal } from "../src/process/shutdown.ts";
import type { ReadyLine } from "../src/process/ready-line.ts";
import { parseOperatorKeys } from "../gateway/keys/auth.ts";
import { serve } from "../gateway/start.ts";
import { kindOf } from "../src/catalog.ts";
import { loadCatalog } from "../src/catalog-file.ts";
import { serviceOptions } from "./service-options.ts";
import { DEMO_ALIAS, DEMO_EMBEDDING_ALIAS, writeDemoCatalog } from "../tiny-model/demo.ts";
import { BIN, binCommand, indent, routeExamples, sdkExamples } from "./examples.ts";

// nothing above loads a native module, so this is the first thing that can fail on an unsupported Node
requireSupportedNode("npm start");

const opts = serviceOptions("npm start");

const keys = parseOperatorKeys(process.env.SVC_OPERATOR_KEYS);
const key = keys[0] ?? `sk-svc_op_${randomBytes(24).toString("base64url")}`;
const modelsDir = join(opts.dataDir, "models");
const bundled = loadCatalog();
const downloaded = bundled.models.filter((m) => existsSync(join(modelsDir, m.file)));
const realChat = downloaded.find((m) => kindOf(m) === "chat")?.alias;
// without a downloaded chat model, tiny random-weight qwen3s written on the spot stand in (under 1 MB)
const demo = realChat === undefined ? writeDemoCatalog(opts.dataDir) : undefined;
const models = demo
  ? { chat: DEMO_ALIAS, embedding: DEMO_EMBEDDING_ALIAS }
  : { chat: realChat!, embedding: downloaded.find((m) => kindOf(m) === "embedding")?.alias };

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
  const child = spawn(process.execPath, [BIN["svc-agent"], "start", ...agentFlags], {
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
  console.log(banner(`${running.url}/v1`, running.coordinatorUrl, providerLine, agentFlags));
} catch (err) {
  // a gateway left up with no agent would look like a service and serve nothing: stop it, and fail
  console.error(`npm start: ${(err as Error).message}`);
  process.exitCode = 1;
  stop();
}

/** What this run prints once all three are up: where each is, and an example per route that works as printed. */
function banner(base: string, coordinatorUrl: string, provider: string, agentFlags: string[]): string {
  return [
    demo ? "svc is up in DEMO mode: no catalog chat model is downloaded yet." : "svc is up.",
    "",
    `  gateway      ${base}`,
    `  coordinator  ${coordinatorUrl}/v1/catalog`,
    `  provider     ${provider}`,
    `  API key      ${key}${keys.length > 0 ? " (from SVC_OPERATOR_KEYS)" : " (generated for this run; set SVC_OPERATOR_KEYS to choose your own)"}`,
    "",
    ...(demo
      ? [
          `The models "${DEMO_ALIAS}" (chat) and "${DEMO_EMBEDDING_ALIAS}" (embeddings) are tiny random-weight qwen3s: they show`,
          "the whole path working, not answers (the chat one writes random characters). For real answers:",
          `  ${binCommand("svc-agent", ["pull", "qwen3-4b"])}`,
          "then npm start again.",
          "",
        ]
      : []),
    "Try it, from any folder (the key goes in through the environment and stdin, never on a command line, where ps",
    "shows it):",
    "",
    ...indent(routeExamples(base, key, models)),
    "",
    "  # the provider's set-up as svc-agent doctor checks it, with the flags this agent was started with",
    `  ${binCommand("svc-agent", ["doctor", ...agentFlags])}`,
    "",
    ...indent(sdkExamples(base, models.chat)),
    "",
    `Ctrl-C stops all three. So does SIGINT or SIGTERM, from a script, to npm's pid or to this one (kill -INT ${process.pid}).`,
    "Logs follow: the gateway's as JSON lines, the agent's as svc-agent lines.",
    "",
  ].join("\n");
}
