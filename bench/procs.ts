// The benchmark's processes, on the shared harness (harness/): our own compiled bins as real child processes,
// started through the one ready-line starter, each one's output sent to a file in the run's folder (so reading
// logs costs the load generator nothing), and optionally a V8 CPU profile of each.
import { join } from "node:path";
import { makeDirs } from "../src/process/make-dir.ts";
import { startProcess, type Proc, type ProcOptions } from "../harness/process.ts";
import { startReady } from "../harness/ready.ts";
import { startSwarm as startSwarmProcess } from "../harness/swarm.ts";
import type { WrittenTinyCatalog } from "../tiny-model/catalog.ts";

export const OPERATOR_KEY = "sk-svc_bench_operator_key";

/**
 * The bench measures the path, not admission: its agents join without tokens, its load is never turned
 * away by queue caps, and a swarm's connect storm from one address is not held to the cap on pending connections
 * (enrollment is checked once per connection; the caps cost nothing until they bite).
 */
const OPEN_ADMISSION = [
  "--open-enrollment", "--max-queue-per-provider", "1000000", "--max-queue-per-alias", "1000000",
  "--max-pending-connections", "100000", "--max-pending-per-address", "100000",
];

/** `--cpu-prof DIR`: every process started after this is set writes a V8 CPU profile there on exit. */
let profileDir: string | undefined;
export function profileInto(dir: string): void {
  profileDir = dir;
}

/** How a bench process runs: output to DIR/NAME.log, a profile when asked, SIGKILL 5 s after a SIGTERM it ignores. */
function benchOptions(dir: string, name: string, env: NodeJS.ProcessEnv = {}): ProcOptions {
  const nodeArgs = profileDir ? ["--cpu-prof", `--cpu-prof-dir=${join(profileDir, name)}`] : [];
  return { name, env, nodeArgs, logFile: join(dir, `${name}.log`), killAfterMs: 5_000 };
}

/** A script that is not one of our bins (the mock upstream, a peer), started the bench's way; `nodeArgs` go before it. */
export function startBenchProcess(dir: string, name: string, script: string, args: string[], env: NodeJS.ProcessEnv = {}, nodeArgs: string[] = []): Proc {
  const options = benchOptions(dir, name, env);
  return startProcess(script, args, { ...options, nodeArgs: [...(options.nodeArgs ?? []), ...nodeArgs] });
}

/** `svc-gateway coordinator` alone, so its memory and CPU are measured apart from the gateway's. */
export async function startCoordinator(dir: string, catalogPath?: string, name = "coordinator", extra: string[] = []): Promise<{ proc: Proc; url: string; secretFile: string; dataDir: string }> {
  // made here: with --database no key store makes it, and the coordinator writes its gateway secret there
  const dataDir = join(dir, `${name}-data`);
  makeDirs(dataDir);
  const args = ["--port", "0", "--data-dir", dataDir, ...OPEN_ADMISSION, ...(catalogPath ? ["--catalog", catalogPath] : []), ...extra];
  const proc = await startReady("svc-gateway coordinator", args, benchOptions(dir, name));
  // given no --gateway-secret, the coordinator made one in its data dir: its gateways present it
  return { proc, url: proc.ready.coordinator, secretFile: join(dataDir, "gateway-secret"), dataDir };
}

/** `svc-gateway serve`, with the given coordinator, or an embedded one when none is given. */
export async function startGateway(
  dir: string,
  options: { coordinator?: { url: string; secretFile: string }; catalogPath?: string; name?: string; args?: string[]; operatorKeys?: string[] } = {},
) {
  const name = options.name ?? "gateway";
  const args = ["--port", "0", "--coordinator-port", "0", "--data-dir", join(dir, `${name}-data`), ...OPEN_ADMISSION, ...(options.args ?? [])];
  if (options.coordinator) args.push("--coordinator", options.coordinator.url, "--gateway-secret-file", options.coordinator.secretFile);
  if (options.catalogPath) args.push("--catalog", options.catalogPath);
  const proc = await startReady("svc-gateway serve", args, benchOptions(dir, name, { SVC_OPERATOR_KEYS: (options.operatorKeys ?? [OPERATOR_KEY]).join(",") }));
  return { proc, url: proc.ready.gateway, coordinatorUrl: proc.ready.coordinator };
}

/** One `svc-agent start` process on the tiny catalog (`extra`: e.g. `--engine synthetic`), once it advertises. */
export async function startAgent(dir: string, name: string, coordinatorUrl: string, tiny: WrittenTinyCatalog, extra: string[]) {
  const args = ["--coordinator", coordinatorUrl, "--catalog", tiny.catalogPath, "--models-dir", tiny.modelsDir, "--data-dir", join(dir, name), ...extra];
  const proc = await startReady("svc-agent start", args, benchOptions(dir, name));
  return { proc, id: proc.ready.provider };
}

/** N synthetic agents in one process (bench/swarm.ts), each with its own keys and WebSocket. */
export async function startSwarm(dir: string, coordinatorUrl: string, catalogPath: string, agents: number, tokens: number, tokenMs: number, name = "swarm") {
  const started = performance.now();
  // thousands of agents attest one by one: give a big swarm on a busy box time in proportion
  const timeoutMs = Math.max(120_000, agents * 40);
  const proc = await startSwarmProcess(coordinatorUrl, catalogPath, agents, tokens, tokenMs, { ...benchOptions(dir, name), timeoutMs });
  return { proc, agents, connectMs: performance.now() - started };
}
