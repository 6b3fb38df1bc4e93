// One request at a time through the whole path (HTTP → embedded gateway → one synthetic agent process and back),
// for a CPU profile of each process: `npx tsx bench/profile-loop.ts --cpu-prof DIR`, then bench/profile-report.ts.
// `--blind` sends them gateway-blind through the client (createSealedFetch), so this process is the caller that
// seals: `node --cpu-prof --cpu-prof-dir=DIR/caller --import tsx bench/profile-loop.ts --blind --cpu-prof DIR` profiles it too.
// `--own-coordinator` gives the coordinator its own process, as bench/blind.ts does, so the gateway's profile is its own.
// `--fetch` sends normal requests through Node's fetch, as bench/blind.ts's normal side does. `--idle-seconds N` then
// reads each process's CPU over N seconds with nothing sent (timers, heartbeats, polls), and gives the marginal CPU
// per request beside it: the loop's CPU less that idle rate over the loop's time. `--gap-ms N` paces the caller.
import { mkdtempSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { buildDist } from "../harness/build.ts";
import { writeTinyCatalog } from "../tiny-model/catalog.ts";
import { createSealedFetch } from "../client/index.ts";
import { FetchClient, LoadClient, type ChatClient, type Sample } from "./load.ts";
import { OPERATOR_KEY, profileInto, startAgent, startCoordinator, startGateway } from "./procs.ts";
import { summarize } from "./stats.ts";

const opts = new Command("tsx bench/profile-loop.ts")
  .option("--cpu-prof <dir>", "write a V8 CPU profile of the gateway and the agent into this folder")
  .option("--seconds <n>", "how long the measured loop runs, after the warm-up requests", "15")
  .option("--warmup <n>", "requests sent before the measured loop (a long-running gateway's code is optimised; a fresh one's is not yet)", "200")
  .option("--stream", "stream the answers")
  .option("--token-ms <n>", "the synthetic engine's pause before each of its 16 tokens", "0")
  .option("--blind", "send each request gateway-blind, sealed in this process by createSealedFetch")
  .option("--own-coordinator", "run the coordinator in its own process (profiled too), not embedded in the gateway")
  .option("--fetch", "send normal requests through Node's fetch (undici), not node:http")
  .option("--gap-ms <n>", "wait this long between one answer and the next request (a slower caller's pace)", "0")
  .option("--idle-seconds <n>", "after the loop, read each process's CPU over this many seconds with nothing sent", "0")
  .parse()
  .opts<{ cpuProf?: string; seconds: string; stream?: boolean; tokenMs: string; warmup: string; blind?: boolean; ownCoordinator?: boolean; fetch?: boolean; gapMs: string; idleSeconds: string }>();

if (opts.cpuProf) profileInto(opts.cpuProf);
buildDist();
const dir = mkdtempSync(join(os.tmpdir(), "svc-profile-"));
const tiny = writeTinyCatalog(join(dir, "tiny"), [{ alias: "tiny-random", seed: 7, endOfTurn: "never" }], "svc-bench");
const coordinator = opts.ownCoordinator ? await startCoordinator(dir, tiny.catalogPath) : undefined;
const gateway = await startGateway(dir, { catalogPath: tiny.catalogPath, name: "gateway", ...(coordinator ? { coordinator } : {}) });
const engine = ["--engine", "synthetic", "--synthetic-tokens", "16", "--synthetic-token-ms", opts.tokenMs];
const { proc: agent } = await startAgent(dir, "agent", coordinator?.url ?? gateway.coordinatorUrl, tiny, engine);
try {
  const target = { url: gateway.url, key: OPERATOR_KEY, model: tiny.catalog.default };
  const client: ChatClient = opts.blind
    ? new FetchClient(target, createSealedFetch({ baseURL: `${gateway.url}/v1`, apiKey: OPERATOR_KEY, catalog: tiny.catalog }))
    : opts.fetch
      ? new FetchClient(target, globalThis.fetch)
      : new LoadClient(target, 1);
  const body = { messages: [{ role: "user", content: "Write one sentence about the sea." }], max_tokens: 16, temperature: 0 };
  const stream = opts.stream === true;
  const one = async (): Promise<Sample> => {
    const sample = await client.chat(body, stream, (why) => console.error(`profile-loop: ${why}`));
    if (!sample.ok) throw new Error("a request failed; the gateway's and agent's logs are in " + dir);
    return sample;
  };
  for (let i = 0; i < Number(opts.warmup); i++) await one();
  const procs = { gateway: gateway.proc, agent, ...(coordinator ? { coordinator: coordinator.proc } : {}) };
  const cpu = () => Object.fromEntries(Object.entries(procs).map(([k, p]) => [k, p.usage().cpuMs]));
  const before = cpu();
  const callerBefore = process.cpuUsage();
  const samples: Sample[] = [];
  const started = performance.now();
  const gapMs = Number(opts.gapMs);
  while (performance.now() - started < Number(opts.seconds) * 1000) {
    samples.push(await one());
    if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
  }
  const seconds = (performance.now() - started) / 1000;
  const after = cpu();
  const whole = summarize(samples.map((s) => s.ms));
  console.log(`${samples.length} requests, ${(samples.length / seconds).toFixed(0)} req/s, p50 ${whole.p50.toFixed(2)} ms, p99 ${whole.p99.toFixed(2)} ms`);
  const { user, system } = process.cpuUsage(callerBefore);
  const per = (k: string) => (after[k]! - before[k]!) / samples.length;
  console.log(`CPU ms per request: ${Object.keys(procs).map((k) => `${k} ${per(k).toFixed(2)}`).join(", ")}, caller ${((user + system) / 1000 / samples.length).toFixed(2)} (a profiler adds its own)`);
  const idleSeconds = Number(opts.idleSeconds);
  if (idleSeconds > 0) {
    const quiet = cpu();
    const t = performance.now();
    await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
    const idleS = (performance.now() - t) / 1000;
    const rate = Object.fromEntries(Object.entries(cpu()).map(([k, ms]) => [k, (ms - quiet[k]!) / idleS]));
    console.log(`idle CPU ms per second (${idleS.toFixed(1)} s, nothing sent): ${Object.keys(procs).map((k) => `${k} ${rate[k]!.toFixed(2)}`).join(", ")}`);
    console.log(`marginal CPU ms per request (the loop's less the idle rate over its ${seconds.toFixed(1)} s): ${Object.keys(procs).map((k) => `${k} ${(per(k) - (rate[k]! * seconds) / samples.length).toFixed(2)}`).join(", ")}`);
  }
  if (stream) {
    const ttft = summarize(samples.map((s) => s.ttftMs!));
    const gaps = summarize(samples.flatMap((s) => s.gapsMs ?? []));
    console.log(`TTFT p50 ${ttft.p50.toFixed(2)} ms, gap p50 ${gaps.p50.toFixed(3)} ms`);
  }
} finally {
  await agent.stop();
  await gateway.proc.stop();
  await coordinator?.proc.stop();
}
