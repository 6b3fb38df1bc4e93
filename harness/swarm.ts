// N synthetic agents in one process (bench/swarm.ts): real daemons and WebSockets, one Node process, so a
// test or the bench can connect hundreds of providers to a real coordinator at once.
import { fileURLToPath } from "node:url";
import { startProcess, TSX, type Proc, type ProcOptions } from "./process.ts";

const SWARM_SCRIPT = fileURLToPath(new URL("../bench/swarm.ts", import.meta.url));

/** Starts the swarm and waits until every agent advertises. */
export async function startSwarm(
  coordinatorUrl: string,
  catalogPath: string,
  agents: number,
  tokens = 3,
  tokenMs = 0,
  options: ProcOptions & { timeoutMs?: number } = {},
): Promise<Proc> {
  const args = ["--coordinator", coordinatorUrl, "--catalog", catalogPath, "--agents", String(agents), "--tokens", String(tokens), "--token-ms", String(tokenMs)];
  const proc = startProcess(SWARM_SCRIPT, args, { name: "swarm", ...options, nodeArgs: [...(options.nodeArgs ?? []), ...TSX] });
  await proc.waitFor(new RegExp(`all ${agents} agents advertising`), options.timeoutMs ?? 60_000);
  return proc;
}
