// macOS: the agent as a launchd LaunchAgent (~/Library/LaunchAgents), as `brew services` installs one: it
// starts at login and launchd restarts it when it exits with an error, at most every 10 s. Pure text in and
// out; manager.ts runs launchctl.
import { join } from "node:path";
import { SERVICE_NAME, type ServiceSpec } from "./spec.ts";
import type { ServiceState } from "./state.ts";

export const plistPath = (home: string) => join(home, "Library", "LaunchAgents", `${SERVICE_NAME}.plist`);

const xml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const unxml = (text: string) => text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, "&");
const str = (value: string) => `<string>${xml(value)}</string>`;

export function launchdPlist(spec: ServiceSpec): string {
  const env = Object.entries(spec.env);
  const lines = [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">`,
    `<plist version="1.0">`,
    `<dict>`,
    `  <key>Label</key>`,
    `  ${str(SERVICE_NAME)}`,
    `  <key>ProgramArguments</key>`,
    `  <array>`,
    ...spec.program.map((arg) => `    ${str(arg)}`),
    `  </array>`,
    ...(env.length === 0
      ? []
      : [`  <key>EnvironmentVariables</key>`, `  <dict>`, ...env.flatMap(([k, v]) => [`    <key>${xml(k)}</key>`, `    ${str(v)}`]), `  </dict>`]),
    `  <key>RunAtLoad</key>`,
    `  <true/>`,
    // restart after a crash, not after a clean stop (SIGTERM ends the agent with 0)
    `  <key>KeepAlive</key>`,
    `  <dict>`,
    `    <key>SuccessfulExit</key>`,
    `    <false/>`,
    `  </dict>`,
    `  <key>ThrottleInterval</key>`,
    `  <integer>10</integer>`,
    // launchd sends SIGKILL after this; the agent needs its session grace to leave cleanly
    `  <key>ExitTimeOut</key>`,
    `  <integer>${spec.stopTimeoutS}</integer>`,
    // never "Background": macOS would hold it to the efficiency cores and throttle its I/O
    `  <key>ProcessType</key>`,
    `  <string>Standard</string>`,
    `  <key>StandardOutPath</key>`,
    `  ${str(spec.consoleFile)}`,
    `  <key>StandardErrorPath</key>`,
    `  ${str(spec.consoleFile)}`,
    `</dict>`,
    `</plist>`,
  ];
  return `${lines.join("\n")}\n`;
}

/** ProgramArguments read back from a plist this module wrote. */
export function plistProgram(text: string): string[] {
  const array = /<key>ProgramArguments<\/key>\s*<array>([\s\S]*?)<\/array>/.exec(text)?.[1] ?? "";
  return [...array.matchAll(/<string>([^<]*)<\/string>/g)].map((m) => unxml(m[1]!));
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
