// Linux: the agent as a systemd user unit (~/.config/systemd/user), enabled for the user's session: it
// starts at login and systemd restarts it after a crash, but not after a usage error (exit 64), which a
// restart cannot fix. Pure text in and out; manager.ts runs systemctl.
import { constants } from "node:os";
import { join } from "node:path";
import { SERVICE_NAME, type ServiceSpec } from "./spec.ts";
import type { ServiceState } from "./state.ts";

export const UNIT = `${SERVICE_NAME}.service`;

export const unitPath = (home: string, configHome = process.env.XDG_CONFIG_HOME) =>
  join(configHome || join(home, ".config"), "systemd", "user", UNIT);

/**
 * One word of a unit file, as systemd reads it back: C escapes inside double quotes, `%%` for a literal
 * `%` (specifiers expand everywhere) and, in Exec lines, `$$` for a literal `$` (variables expand there).
 */
function word(value: string, exec: boolean): string {
  let text = value.replace(/%/g, "%%");
  if (exec) text = text.replace(/\$/g, "$$$$");
  if (/^[\w@%+=:,./-]+$/.test(text)) return text;
  return `"${text.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;
}

export function systemdUnit(spec: ServiceSpec): string {
  return [
    "[Unit]",
    "Description=svc provider agent (svc-agent start)",
    "",
    "[Service]",
    "Type=simple",
    `ExecStart=${spec.program.map((arg) => word(arg, true)).join(" ")}`,
    ...Object.entries(spec.env).map(([k, v]) => `Environment=${word(`${k}=${v}`, false)}`),
    "Restart=on-failure",
    "RestartSec=5",
    "RestartPreventExitStatus=64",
    // SIGTERM lets a running session finish; SIGKILL only after the grace it was given
    `TimeoutStopSec=${spec.stopTimeoutS}`,
    `SyslogIdentifier=${SERVICE_NAME}`,
    "",
    "[Install]",
    "WantedBy=default.target",
    "",
  ].join("\n");
}

/** ExecStart's words read back from a unit this module wrote. */
export function unitProgram(text: string): string[] {
  const line = /^ExecStart=(.*)$/m.exec(text)?.[1] ?? "";
  return [...line.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g)].map(([, quoted, bare]) => {
    const raw = quoted === undefined ? bare! : quoted.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    return raw.replace(/\$\$/g, "$").replace(/%%/g, "%");
  });
}

const SIGNALS = Object.fromEntries(Object.entries(constants.signals).map(([name, n]) => [n, name]));

/** `systemctl --user show svc-agent.service -p …`: Key=Value lines. */
export function systemdState(shown: string): ServiceState {
  const props = Object.fromEntries(shown.split("\n").filter((l) => l.includes("=")).map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
  const pid = Number(props.MainPID);
  const status = Number(props.ExecMainStatus);
  // ExecMainCode is the waitid() si_code: 1 exited, 2 killed, 3 dumped core; 0 never ran
  const lastExit = { "1": `exit code ${status}`, "2": `killed by ${SIGNALS[status] ?? status}`, "3": `dumped core (${SIGNALS[status] ?? status})` }[props.ExecMainCode ?? "0"];
  return {
    loaded: props.LoadState === "loaded",
    // "activating" is also the wait before an automatic restart: not running
    running: props.ActiveState === "active",
    ...(pid > 0 ? { pid } : {}),
    ...(lastExit !== undefined ? { lastExit } : {}),
  };
}

/** The properties systemdState reads. */
export const SHOW_PROPERTIES = "LoadState,ActiveState,SubState,MainPID,ExecMainCode,ExecMainStatus";
