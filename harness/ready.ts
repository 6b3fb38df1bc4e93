// The one starter of our long-running commands (`svc-gateway serve`, `svc-gateway coordinator`, `svc-agent
// start`): spawns the compiled bin and resolves once it prints its ready line (src/process/ready-line.ts), with
// the addresses that line carries. One that exits or stays silent is stopped and the error quotes its output.
import type { ReadyCommand, ReadyLine } from "../src/process/ready-line.ts";
import { AGENT_BIN, GATEWAY_BIN, startProcess, type Proc, type ProcOptions } from "./process.ts";

export type Ready<C extends ReadyCommand> = Extract<ReadyLine, { ready: C }>;
export type ReadyProc<C extends ReadyCommand> = Proc & { ready: Ready<C> };

const BINS: Record<ReadyCommand, [string, string]> = {
  "svc-gateway serve": [GATEWAY_BIN, "serve"],
  "svc-gateway coordinator": [GATEWAY_BIN, "coordinator"],
  "svc-agent start": [AGENT_BIN, "start"],
};

/** A loaded machine may take this long to start a bin; the caller's hook or test timeout usually ends first. */
const READY_MS = 60_000;

/** `command ...args`, once ready; a gateway also once linked to its coordinator (its `connected` log line). */
export async function startReady<C extends ReadyCommand>(command: C, args: string[], options: ProcOptions & { timeoutMs?: number } = {}): Promise<ReadyProc<C>> {
  const [bin, subcommand] = BINS[command];
  const proc = startProcess(bin, [subcommand, ...args], { name: command, ...options });
  const timeoutMs = options.timeoutMs ?? READY_MS;
  try {
    const ready = await waitForReady(proc, command, timeoutMs);
    if (command === "svc-gateway serve") await proc.waitForLog((line) => line.msg === "connected to the coordinator", timeoutMs);
    return { ...proc, ready };
  } catch (err) {
    await proc.kill("SIGKILL");
    throw err;
  }
}

/** The ready line of a process started some other way (the installed tarball's bins, a command as the docs print it). */
export async function waitForReady<C extends ReadyCommand>(proc: Proc, command: C, timeoutMs = READY_MS): Promise<Ready<C>> {
  return (await proc.waitForLog((line) => line.ready === command, timeoutMs)) as Ready<C>;
}
