// The I/O edge of `svc-agent service`: writes and removes the service file and asks launchd or systemd to
// load, stop and describe it. The only place that runs launchctl or systemctl; the file text comes from
// launchd.ts and systemd.ts.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { makeDirs } from "../../src/process/make-dir.ts";
import { launchdPlist, launchdState, launchdTarget, plistPath, plistProgram } from "./launchd.ts";
import { logFileIn, type ServiceSpec } from "./spec.ts";
import type { ServiceState } from "./state.ts";
import { SHOW_PROPERTIES, systemdState, systemdUnit, UNIT, unitPath, unitProgram } from "./systemd.ts";

export type ServicePlatform = "darwin" | "linux";

export interface Manager {
  /** The service file. */
  file: string;
  /** The command that manages it, for messages. */
  tool: string;
  /** What to do when the tool cannot run at all. */
  hint: string;
  render(spec: ServiceSpec): string;
  /** The argv a written file runs. */
  program(text: string): string[];
  /** Loads (or reloads) the written file and starts it. */
  load(): void;
  /** Stops it and forgets it; no error when it was not loaded. */
  unload(): void;
  state(): ServiceState;
}

export function managerFor(platform: ServicePlatform, home: string, uid: number): Manager {
  if (platform === "darwin") {
    const file = plistPath(home);
    const target = launchdTarget(uid);
    return {
      file,
      tool: "launchctl",
      hint: "run it from a logged-in user's session (launchctl cannot reach the GUI domain over a plain ssh login)",
      render: launchdPlist,
      program: plistProgram,
      load() {
        quietly(() => run("launchctl", ["bootout", target])); // an older copy may be loaded
        run("launchctl", ["bootstrap", `gui/${uid}`, file]);
      },
      unload: () => quietly(() => run("launchctl", ["bootout", target])),
      state() {
        try {
          return launchdState(run("launchctl", ["print", target]));
        } catch (err) {
          // launchctl print fails for a service it does not know: installed but not loaded
          if ((err as ToolError).missing) throw err;
          return { loaded: false, running: false };
        }
      },
    };
  }
  const systemctl = (...args: string[]) => run("systemctl", ["--user", ...args]);
  return {
    file: unitPath(home),
    tool: "systemctl --user",
    hint: "this needs a systemd user session; where there is none (a container, WSL without systemd, an su shell) run svc-agent start under your own supervisor",
    render: systemdUnit,
    program: unitProgram,
    load() {
      systemctl("daemon-reload");
      systemctl("enable", UNIT);
      // restart, not start: a running agent picks up the new flags
      systemctl("restart", UNIT);
    },
    unload() {
      systemctl("disable", "--now", UNIT);
    },
    state: () => systemdState(systemctl("show", UNIT, "-p", SHOW_PROPERTIES)),
  };
}

/** Writes the file (0600: it may hold the enrollment token) and loads it. */
export function install(manager: Manager, spec: ServiceSpec): void {
  makeDirs(dirname(manager.file));
  // launchd opens the console file itself and will not start the agent when its directory is missing
  makeDirs(dirname(spec.consoleFile), 0o700);
  writeFileSync(manager.file, manager.render(spec), { mode: 0o600 });
  try {
    manager.load();
  } catch (err) {
    throw new Error(`wrote ${manager.file}, but ${manager.tool} could not load it: ${(err as Error).message}; ${manager.hint}`);
  }
}

/** Stops and removes the service; false when there was none. */
export function uninstall(manager: Manager): boolean {
  if (!existsSync(manager.file)) return false;
  let failure: Error | undefined;
  try {
    manager.unload();
  } catch (err) {
    failure = err as Error;
  }
  rmSync(manager.file);
  if (failure) throw new Error(`removed ${manager.file}, but ${manager.tool} could not stop it: ${failure.message}`);
  return true;
}

export type Status = { installed: false } | { installed: true; logFile?: string; state: ServiceState | Error };

export function status(manager: Manager): Status {
  if (!existsSync(manager.file)) return { installed: false };
  const logFile = logFileIn(manager.program(readFileSync(manager.file, "utf8")));
  let state: ServiceState | Error;
  try {
    state = manager.state();
  } catch (err) {
    state = err as Error;
  }
  return { installed: true, ...(logFile ? { logFile } : {}), state };
}

class ToolError extends Error {
  constructor(
    message: string,
    /** The command itself is not on this machine. */
    readonly missing = false,
  ) {
    super(message);
  }
}

/** Runs a manager command; its failure is one line: the command and the first line it printed. */
function run(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string; stdout?: string };
    if (e.code === "ENOENT") throw new ToolError(`${command} is not installed on this machine`, true);
    const said = `${e.stderr ?? ""}\n${e.stdout ?? ""}`.split("\n").map((l) => l.trim()).find(Boolean);
    throw new ToolError(`${command} ${args.join(" ")}: ${said ?? e.message}`);
  }
}

function quietly<T>(f: () => T): T | undefined {
  try {
    return f();
  } catch {
    return undefined;
  }
}
