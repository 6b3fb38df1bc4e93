// The benchmark's processes: our own bins started as real child processes, their output sent to a file (so
// reading logs costs the load generator nothing), and their memory and CPU read from /proc.
import { spawn, type ChildProcess } from "node:child_process";
import { openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";

export const GATEWAY_BIN = fileURLToPath(new URL("../bin/svc-gateway.js", import.meta.url));
export const AGENT_BIN = fileURLToPath(new URL("../bin/svc-agent.js", import.meta.url));
export const SWARM_SCRIPT = fileURLToPath(new URL("./swarm.ts", import.meta.url));

export interface Usage {
  /** Resident set now, MiB. */
  rssMb: number;
  /** Peak resident set since start (VmHWM), MiB. */
  peakMb: number;
  /** User + system CPU time since start, ms. */
  cpuMs: number;
}

export class BenchProc {
  /** `--cpu-prof DIR`: every process started after this is set writes a V8 CPU profile there on exit. */
  static profileDir?: string;
  private readonly child: ChildProcess;
  readonly logPath: string;
  private exited = false;

  constructor(
    readonly name: string,
    command: string[],
    dir: string,
    env: NodeJS.ProcessEnv = {},
  ) {
    this.logPath = join(dir, `${name}.log`);
    const out = openSync(this.logPath, "a");
    const profile = BenchProc.profileDir ? ["--cpu-prof", `--cpu-prof-dir=${join(BenchProc.profileDir, name)}`] : [];
    this.child = spawn(process.execPath, [...profile, ...command], { env: { ...process.env, ...env }, stdio: ["ignore", out, out] });
    this.child.once("exit", () => (this.exited = true));
  }

  get pid(): number {
    return this.child.pid!;
  }

  log(): string {
    return readFileSync(this.logPath, "utf8");
  }

  async waitFor(pattern: RegExp, timeoutMs = 60_000): Promise<RegExpExecArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = pattern.exec(this.log());
      if (match) return match;
      if (this.exited) throw new Error(`${this.name} exited before ${pattern}:\n${this.log().slice(-2000)}`);
      if (Date.now() > deadline) throw new Error(`${this.name}: no ${pattern} within ${timeoutMs} ms:\n${this.log().slice(-2000)}`);
      await sleep(50);
    }
  }

  usage(): Usage {
    const status = readFileSync(`/proc/${this.pid}/status`, "utf8");
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
    // /proc/PID/stat: fields 14 and 15 are utime and stime in clock ticks (100 per second on Linux)
    const stat = readFileSync(`/proc/${this.pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return { rssMb: kb("VmRSS") / 1024, peakMb: kb("VmHWM") / 1024, cpuMs: ticks * 10 };
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 5_000);
    await gone;
    clearTimeout(timer);
  }
}

export const OPERATOR_KEY = "sk-svc_bench_operator_key";

/**
 * The bench measures the path, not admission: its agents join without tokens and its load is never turned
 * away by queue caps (enrollment is checked once per connection; the caps cost nothing until they bite).
 */
const OPEN_ADMISSION = ["--open-enrollment", "--max-queue-per-provider", "1000000", "--max-queue-per-alias", "1000000"];

/** `svc-gateway coordinator` alone, so its memory and CPU are measured apart from the gateway's. */
export async function startCoordinator(dir: string, catalogPath?: string): Promise<{ proc: BenchProc; url: string }> {
  const args = [GATEWAY_BIN, "coordinator", "--port", "0", "--data-dir", join(dir, "coordinator-data"), ...OPEN_ADMISSION];
  const proc = new BenchProc("coordinator", [...args, ...(catalogPath ? ["--catalog", catalogPath] : [])], dir);
  const url = (await proc.waitFor(/coordinator at (http:\/\/\S+) /))[1]!;
  return { proc, url };
}

/** `svc-gateway serve`, with the given coordinator, or an embedded one when none is given. */
export async function startGateway(dir: string, options: { coordinatorUrl?: string; catalogPath?: string; name?: string } = {}) {
  const args = [GATEWAY_BIN, "serve", "--port", "0", "--coordinator-port", "0", "--data-dir", join(dir, `${options.name ?? "gateway"}-data`), ...OPEN_ADMISSION];
  if (options.coordinatorUrl) args.push("--coordinator", options.coordinatorUrl);
  if (options.catalogPath) args.push("--catalog", options.catalogPath);
  const proc = new BenchProc(options.name ?? "gateway", args, dir, { SVC_OPERATOR_KEYS: OPERATOR_KEY });
  const url = (await proc.waitFor(/OpenAI routes at (http:\/\/\S+)\/v1/))[1]!;
  const coordinatorUrl = options.coordinatorUrl ?? (await proc.waitFor(/embedded coordinator at (http:\/\/\S+) /))[1]!;
  await proc.waitFor(/connected to the coordinator/);
  return { proc, url, coordinatorUrl };
}

/** N synthetic agents in one process (bench/swarm.ts), each with its own keys and WebSocket. */
export async function startSwarm(dir: string, coordinatorUrl: string, catalogPath: string, agents: number, tokens: number, tokenMs: number, name = "swarm") {
  const args = ["--import", "tsx", SWARM_SCRIPT, "--coordinator", coordinatorUrl, "--catalog", catalogPath, "--agents", String(agents), "--tokens", String(tokens), "--token-ms", String(tokenMs)];
  const proc = new BenchProc(name, args, dir);
  const started = performance.now();
  const ready = await proc.waitFor(/all (\d+) agents advertising/, 120_000);
  return { proc, agents: Number(ready[1]), connectMs: performance.now() - started };
}
