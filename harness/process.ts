// One harness for the real child processes of tests and the bench (`svc-gateway …`, `svc-agent …`, the swarm,
// `npm start`): start one, wait for a line or a JSON log line, read its output, its memory and CPU, and stop
// it. Output is held in memory, or written to a file when a load generator must not spend its own CPU on
// reading it (the bench): then it is read only when asked. Every child is registered (registry.ts), so none
// outlives the test run.
import { spawn, type ChildProcess } from "node:child_process";
import { openSync, readdirSync, readFileSync } from "node:fs";
import { basename } from "node:path";
import { fileURLToPath } from "node:url";
import { register } from "./registry.ts";

/** The compiled bins, what npm installs: built once per run (build.ts), they start in half the time tsx takes. */
export const GATEWAY_BIN = fileURLToPath(new URL("../dist/bin/svc-gateway.js", import.meta.url));
export const AGENT_BIN = fileURLToPath(new URL("../dist/bin/svc-agent.js", import.meta.url));
/** Node's flags that run a TypeScript script. */
export const TSX = ["--import", "tsx"];

export interface ProcOptions {
  env?: NodeJS.ProcessEnv;
  /** Node's own flags, before the script: TSX, `--cpu-prof`. */
  nodeArgs?: string[];
  /** Send stdout and stderr, together, to this file (appending) instead of holding them here. */
  logFile?: string;
  /** `stop()` sends SIGKILL when SIGTERM has not ended the process after this long; by default it waits. */
  killAfterMs?: number;
  /** For messages; defaults to the script's file name and first argument. */
  name?: string;
  cwd?: string | URL;
  /** Give the child a standard input to write to (`child.stdin`), as a process fed over a pipe has; else it reads none. */
  input?: boolean;
  /** Open an IPC channel to the child, as npm start does to its agent (`child.disconnect()` closes it). */
  ipc?: boolean;
  /** The script is an executable of its own (nats-server), not a Node script: run it without node. */
  native?: boolean;
  /** Lead a process group of its own, as a terminal starts a command: `signalGroup` then reaches all of it, as Ctrl-C does. */
  group?: boolean;
}

export interface Usage {
  /** Resident set now, MiB. */
  rssMb: number;
  /** Peak resident set since start (VmHWM), MiB. */
  peakMb: number;
  /** User + system CPU time since start, ms. */
  cpuMs: number;
}

export interface Proc {
  child: ChildProcess;
  name: string;
  /** Standard output so far; with `logFile`, the file: standard error as well. */
  stdout(): string;
  /** Standard error so far; with `logFile` it is in `stdout()` and this is empty. */
  stderr(): string;
  /** Every JSON log line so far. */
  logs(): Record<string, unknown>[];
  /** Resolves with the match once stdout matches `pattern`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Resolves once a JSON log line passes `test`. */
  waitForLog(test: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Memory and CPU time from /proc (Linux). */
  usage(): Usage;
  /** Settles when the process has exited, however it came to. */
  exited: Promise<void>;
  /** SIGTERM, and wait for the exit (SIGKILL after `killAfterMs` when given). */
  stop(): Promise<void>;
  kill(signal: NodeJS.Signals): Promise<void>;
  /** The signal to every process of its group (started with `group`), as a terminal's Ctrl-C sends SIGINT. */
  signalGroup(signal: NodeJS.Signals): void;
}

/** How often a process writing to a file is read while something waits on its output. */
const FILE_POLL_MS = 50;
/** How much of the output an error message quotes. */
const QUOTED = 8_000;

/** `node [nodeArgs] script ...args`. */
export function startProcess(script: string, args: string[], options: ProcOptions = {}): Proc {
  const { logFile } = options;
  const name = options.name ?? [basename(script), args[0]].filter(Boolean).join(" ");
  const out = logFile === undefined ? "pipe" : openSync(logFile, "a");
  const child = spawn(options.native ? script : process.execPath, options.native ? args : [...(options.nodeArgs ?? []), script, ...args], {
    env: { ...process.env, ...options.env },
    cwd: options.cwd,
    stdio: [options.input ? "pipe" : "ignore", out, out, ...(options.ipc ? (["ipc"] as const) : [])],
    detached: options.group === true,
  });
  let stdout = "";
  let stderr = "";
  const logLines: Record<string, unknown>[] = [];
  const waiters = new Set<() => void>();
  const wakeAll = () => {
    for (const wake of waiters) wake();
  };
  child.stdout?.on("data", (d: Buffer) => {
    const before = stdout.lastIndexOf("\n") + 1;
    stdout += d.toString();
    logLines.push(...jsonLines(completeLines(stdout.slice(before))));
    wakeAll();
  });
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
    wakeAll();
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  register({ child, name, exited });
  child.once("exit", wakeAll);
  const running = () => child.exitCode === null && child.signalCode === null;
  const output = logFile === undefined ? () => stdout : () => readFileSync(logFile, "utf8");
  const logs = logFile === undefined ? () => [...logLines] : () => jsonLines(completeLines(output()));

  function waitUntil<T>(find: () => T | undefined, what: string, timeoutMs: number): Promise<T> {
    return new Promise((resolve, reject) => {
      const settle = (outcome: () => void) => {
        clearTimeout(timer);
        clearInterval(poll);
        waiters.delete(check);
        outcome();
      };
      const quoted = () => `${output().slice(-QUOTED)}\n${stderr.slice(-QUOTED)}`;
      const timer = setTimeout(() => settle(() => reject(new Error(`${name}: ${what} did not appear within ${timeoutMs} ms:\n${quoted()}`))), timeoutMs);
      // a file is read on a timer; piped output wakes the waiters as it arrives
      const poll = logFile === undefined ? undefined : setInterval(() => check(), FILE_POLL_MS);
      const check = () => {
        const found = find();
        if (found !== undefined) settle(() => resolve(found));
        else if (!running()) settle(() => reject(new Error(`${name} exited (${child.exitCode ?? child.signalCode}) before ${what}:\n${quoted()}`)));
      };
      waiters.add(check);
      check();
    });
  }

  return {
    child,
    name,
    stdout: output,
    stderr: () => stderr,
    logs,
    waitFor: (pattern, timeoutMs = 30_000) => waitUntil(() => pattern.exec(output()) ?? undefined, String(pattern), timeoutMs),
    waitForLog: (test, timeoutMs = 10_000) => waitUntil(() => logs().find(test), "a matching log line", timeoutMs),
    usage: () => usageOf(child.pid!),
    exited,
    async stop() {
      if (running()) child.kill("SIGTERM");
      const timer = options.killAfterMs === undefined ? undefined : setTimeout(() => child.kill("SIGKILL"), options.killAfterMs);
      await exited;
      clearTimeout(timer);
    },
    async kill(signal) {
      if (running()) child.kill(signal);
      await exited;
    },
    signalGroup(signal) {
      if (!options.group) throw new Error(`${name}: started without a process group of its own`);
      process.kill(-child.pid!, signal);
    },
  };
}

/** Up to the last newline: the last piece may be a line still being written. */
const completeLines = (text: string) => text.slice(0, text.lastIndexOf("\n") + 1);

/** The lines that are JSON objects (log lines, the ready line); a command's pretty-printed JSON is not among them. */
function jsonLines(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((line) => line.startsWith("{") && line.endsWith("}"))
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
}

/** /proc/PID/stat's fields after the command name: [1] is the parent, [11..14] utime, stime, cutime, cstime in ticks. */
function statFields(pid: number | string): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

function usageOf(pid: number, withReapedChildren = false): Usage {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
  // utime and stime in clock ticks (100 per second on Linux); cutime and cstime: children it has waited for
  const fields = statFields(pid);
  const ticks = Number(fields[11]) + Number(fields[12]) + (withReapedChildren ? Number(fields[13]) + Number(fields[14]) : 0);
  return { rssMb: kb("VmRSS") / 1024, peakMb: kb("VmHWM") / 1024, cpuMs: ticks * 10 };
}

/**
 * A server that forks a process per client (PostgreSQL): the parent and its live children summed, with the CPU of
 * the children that have exited (the parent waited for them). Peak is the parent's own.
 */
export function treeUsage(pid: number): Usage {
  const total = usageOf(pid, true);
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (Number(statFields(name)[1]) !== pid) continue;
      const child = usageOf(Number(name));
      total.rssMb += child.rssMb;
      total.cpuMs += child.cpuMs;
    } catch {
      // it exited while we looked: its CPU is in the parent's cutime from now on
    }
  }
  return total;
}

/** Live processes (Linux /proc) whose command line mentions `text`: a test's own data dir finds every layer it started. */
export function processesMentioning(text: string): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(text);
      } catch {
        return false; // it exited while we looked
      }
    })
    .map(Number);
}

/** A process as a failed check shows it: its pid, state and command line (Linux /proc), or that it is gone. */
export function describeProcess(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
    return `${pid} (${state}): ${readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim()}`;
  } catch {
    return `${pid}: gone`;
  }
}
