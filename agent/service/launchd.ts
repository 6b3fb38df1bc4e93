// macOS: the agent as a launchd LaunchAgent (~/Library/LaunchAgents), as `brew services` installs one: it
// starts at login and launchd restarts it when it exits with an error, at most every 10 s. Pure text in and
// out; manager.ts runs launchctl.
import { join } from "node:path";
import { build, parse, type PlistValue } from "plist";
import { SERVICE_NAME, type ServiceSpec } from "./spec.ts";
import type { ServiceState } from "./state.ts";

export const plistPath = (home: string) => join(home, "Library", "LaunchAgents", `${SERVICE_NAME}.plist`);

export function launchdPlist(spec: ServiceSpec): string {
  return build({
    Label: SERVICE_NAME,
    ProgramArguments: spec.program,
    ...(Object.keys(spec.env).length === 0 ? {} : { EnvironmentVariables: spec.env }),
    RunAtLoad: true,
    // restart after a crash, not after a clean stop (SIGTERM ends the agent with 0)
    KeepAlive: { SuccessfulExit: false },
    ThrottleInterval: 10,
    // launchd sends SIGKILL after this; the agent needs its session grace to leave cleanly
    ExitTimeOut: spec.stopTimeoutS,
    // never "Background": macOS would hold it to the efficiency cores and throttle its I/O
    ProcessType: "Standard",
    StandardOutPath: spec.consoleFile,
    StandardErrorPath: spec.consoleFile,
  });
}

/** ProgramArguments read back from the installed plist; none when it is not a plist, or has no such array of strings. */
export function plistProgram(text: string): string[] {
  let plist: PlistValue;
  try {
    plist = parse(text);
  } catch {
    return [];
  }
  const program: unknown = (plist as { ProgramArguments?: unknown } | null)?.ProgramArguments;
  return Array.isArray(program) && program.every((arg): arg is string => typeof arg === "string") ? program : [];
}

/** The service's target in the user's GUI domain, as launchctl names it. */
export const launchdTarget = (uid: number) => `gui/${uid}/${SERVICE_NAME}`;

/** `launchctl print gui/UID/svc-agent`: `state = running`, `pid = N`, `last exit code = N`. */
export function launchdState(printed: string): ServiceState {
  const field = (name: string) => new RegExp(`^\\s*${name} = (.+)$`, "m").exec(printed)?.[1]?.trim();
  const pid = Number(field("pid"));
  const lastExit = field("last exit code");
  return {
    loaded: true,
    running: field("state") === "running",
    ...(Number.isInteger(pid) && pid > 0 ? { pid } : {}),
    ...(lastExit !== undefined && /^-?\d+$/.test(lastExit) ? { lastExit: `exit code ${lastExit}` } : {}),
  };
}
