// `svc-agent service`: the launchd plist and the systemd unit it writes from start's flags (checked by a
// plist parser and by `systemd-analyze verify`), and install/status/uninstall/logs against stand-in
// launchctl and systemctl programs that record what they were asked (no test touches a real service manager).
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "plist";
import { afterAll, describe, expect, it } from "vitest";
import { unitProgram } from "../../agent/service/systemd.ts";
import { runCli } from "../../harness/cli.ts";
import { AGENT_BIN } from "../../harness/process.ts";
import { tempDir } from "../fixtures/tiny-catalog.ts";

const root = tempDir("svc-service-");
afterAll(() => rmSync(root, { recursive: true, force: true }));

let homes = 0;
/** A fresh home, and the environment that points the agent's service commands at it. */
function home(): { dir: string; env: NodeJS.ProcessEnv } {
  const dir = join(root, `home${++homes}`);
  mkdirSync(dir);
  return { dir, env: { HOME: dir, XDG_CONFIG_HOME: join(dir, ".config"), SVC_PROVIDER_TOKEN: "" } };
}

// a name with everything the two file formats must escape
const NAME = `Ann's "mac" <m1> & $HOME at 100%\\`;
const FLAGS = ["--coordinator", "http://127.0.0.1:8081", "--memory-gb", "24", "--name", NAME, "--shutdown-grace-ms", "5000", "--models-dir", "rel/models"];

const printed = async (platform: string, extra: string[] = []) => {
  const h = home();
  const result = await runCli("svc-agent", ["service", "install", ...FLAGS, ...extra, "--print", "--platform", platform], { ...h.env, SVC_PROVIDER_TOKEN: "tok_secret" });
  expect([result.code, result.stderr]).toEqual([0, ""]);
  return { text: result.stdout, home: h.dir };
};

/** What the service runs: node on the bin (never npx), start, the flags made absolute, data dir and log. */
const program = (homeDir: string) => [
  process.execPath, AGENT_BIN, "start",
  "--coordinator", "http://127.0.0.1:8081", "--models-dir", join(process.cwd(), "rel/models"), "--memory-gb", "24",
  "--name", NAME, "--shutdown-grace-ms", "5000",
  "--data-dir", join(homeDir, ".svc"), "--log-file", join(homeDir, ".svc", "logs", "svc-agent.log"),
];

describe("svc-agent service install --print", () => {
  it("writes a launchd plist that parses, runs node on the bin with start's flags and restarts after a crash", async () => {
    const { text, home: h } = await printed("darwin");
    const plist = parse(text) as Record<string, unknown>;
    expect(plist).toEqual({
      Label: "svc-agent",
      ProgramArguments: program(h),
      // the token is in the environment, never in argv where ps shows it
      EnvironmentVariables: { SVC_PROVIDER_TOKEN: "tok_secret" },
      RunAtLoad: true,
      KeepAlive: { SuccessfulExit: false },
      ThrottleInterval: 10,
      ExitTimeOut: 15,
      ProcessType: "Standard",
      StandardOutPath: join(h, ".svc", "logs", "svc-agent.console.log"),
      StandardErrorPath: join(h, ".svc", "logs", "svc-agent.console.log"),
    });
  });

  it("writes a systemd user unit that systemd-analyze verify accepts without a warning", async () => {
    const { text, home: h } = await printed("linux");
    expect(unitProgram(text)).toEqual(program(h));
    expect(text).toContain('\nEnvironment=SVC_PROVIDER_TOKEN=tok_secret\n');
    // restart after a crash, not after a usage error; stop waits out the 5 s session grace plus 10 s to leave
    for (const line of ["Restart=on-failure", "RestartPreventExitStatus=64", "TimeoutStopSec=15", "WantedBy=default.target"]) {
      expect(text.split("\n")).toContain(line);
    }
    const dir = join(h, "unit");
    mkdirSync(dir);
    writeFileSync(join(dir, "svc-agent.service"), text);
    // --user needs a runtime dir of its own; verify exits 0 on mere warnings, so stderr must be empty too
    const runtime = join(h, "run");
    mkdirSync(runtime, { mode: 0o700 });
    const verify = spawnSync("systemd-analyze", ["--user", "verify", join(dir, "svc-agent.service")], { encoding: "utf8", env: { ...process.env, XDG_RUNTIME_DIR: runtime } });
    expect(verify.error).toBeUndefined();
    expect([verify.status, verify.stderr]).toEqual([0, ""]);
  });

  it("a --model path that does not exist is refused before anything is written", async () => {
    const h = home();
    const result = await runCli("svc-agent", ["service", "install", ...FLAGS, "--model", "qwen3-4b=/nonexistent.gguf", "--print"], h.env);
    expect([result.code, result.stdout]).toEqual([64, ""]);
    expect(result.stderr).toContain("no file at /nonexistent.gguf; see --help");
  });
});

/** A stand-in for launchctl or systemctl: records each call's arguments and prints `answer` for `show`/`print`. */
function fakeTool(name: string, answer: string, exit = 0, stderr = ""): { env: NodeJS.ProcessEnv; calls(): string[] } {
  const dir = tempDir("svc-tool-");
  const log = join(dir, "calls");
  writeFileSync(join(dir, "answer"), answer);
  writeFileSync(
    join(dir, name),
    `#!/bin/sh\necho "$*" >> '${log}'\ncase "$*" in *show*|print*) cat '${join(dir, "answer")}';; esac\n${stderr ? `echo '${stderr}' >&2\n` : ""}exit ${exit}\n`,
  );
  chmodSync(join(dir, name), 0o755);
  return { env: { PATH: `${dir}:${process.env.PATH}` }, calls: () => (existsSync(log) ? readFileSync(log, "utf8").trim().split("\n") : []) };
}

const RUNNING_UNIT = "LoadState=loaded\nActiveState=active\nSubState=running\nMainPID=4242\nExecMainCode=0\nExecMainStatus=0\n";

describe("svc-agent service on Linux (systemd)", () => {
  it("status before install says not installed, exit 3", async () => {
    const h = home();
    const result = await runCli("svc-agent", ["service", "status", "--platform", "linux"], h.env);
    const file = join(h.dir, ".config", "systemd", "user", "svc-agent.service");
    expect([result.code, result.stdout, result.stderr]).toEqual([3, `installed: no (no ${file}); install it with svc-agent service install --coordinator URL\n`, ""]);
  });

  it("install writes the unit 0600, enables and restarts it; status reads it back; uninstall disables and removes it", async () => {
    const h = home();
    const systemctl = fakeTool("systemctl", RUNNING_UNIT);
    const env = { ...h.env, ...systemctl.env, SVC_PROVIDER_TOKEN: "tok_secret" };
    const file = join(h.dir, ".config", "systemd", "user", "svc-agent.service");
    const installed = await runCli("svc-agent", ["service", "install", "--coordinator", "http://127.0.0.1:8081", "--platform", "linux"], env);
    expect([installed.code, installed.stderr]).toEqual([0, ""]);
    expect(installed.stdout).toContain(`installed ${file}`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, "utf8")).toContain("SVC_PROVIDER_TOKEN=tok_secret");
    expect(systemctl.calls()).toEqual(["--user daemon-reload", "--user enable svc-agent.service", "--user restart svc-agent.service"]);

    const status = await runCli("svc-agent", ["service", "status", "--platform", "linux"], env);
    const log = join(h.dir, ".svc", "logs", "svc-agent.log");
    expect([status.code, status.stdout]).toEqual([0, `installed: ${file}\nlog: ${log}\nrunning: yes (pid 4242)\nlast exit: none\n`]);

    const removed = await runCli("svc-agent", ["service", "uninstall", "--platform", "linux"], env);
    expect([removed.code, removed.stdout]).toEqual([0, `stopped and removed ${file}\n`]);
    expect(existsSync(file)).toBe(false);
    expect(systemctl.calls().at(-1)).toBe("--user disable --now svc-agent.service");
  });

  it("where systemctl cannot reach a user session, install says so in one line", async () => {
    const h = home();
    const systemctl = fakeTool("systemctl", "", 1, "Failed to connect to bus: No medium found");
    const result = await runCli("svc-agent", ["service", "install", "--coordinator", "http://127.0.0.1:8081", "--platform", "linux"], { ...h.env, ...systemctl.env });
    const file = join(h.dir, ".config", "systemd", "user", "svc-agent.service");
    expect([result.code, result.stdout]).toEqual([1, ""]);
    expect(result.stderr).toBe(
      `svc-agent: wrote ${file}, but systemctl --user could not load it: systemctl --user daemon-reload: Failed to connect to bus: No medium found; this needs a systemd user session; where there is none (a container, WSL without systemd, an su shell) run svc-agent start under your own supervisor\n`,
    );
  });
});

describe("svc-agent service on macOS (launchd)", () => {
  it("install bootstraps the plist in the user's GUI domain; status reads launchctl print", async () => {
    const h = home();
    const uid = process.getuid!();
    const launchctl = fakeTool("launchctl", `gui/${uid}/svc-agent = {\n\tstate = not running\n\tlast exit code = 1\n}\n`);
    const env = { ...h.env, ...launchctl.env };
    const file = join(h.dir, "Library", "LaunchAgents", "svc-agent.plist");
    const installed = await runCli("svc-agent", ["service", "install", "--coordinator", "http://127.0.0.1:8081", "--platform", "darwin"], env);
    expect([installed.code, installed.stderr]).toEqual([0, ""]);
    expect(launchctl.calls()).toEqual([`bootout gui/${uid}/svc-agent`, `bootstrap gui/${uid} ${file}`]);
    // launchd opens the console log itself: its directory must be there first
    expect(existsSync(join(h.dir, ".svc", "logs"))).toBe(true);
    const status = await runCli("svc-agent", ["service", "status", "--platform", "darwin"], env);
    expect(status.code).toBe(3);
    // the log's path is read back from the plist's ProgramArguments
    expect(status.stdout).toBe(`installed: ${file}\nlog: ${join(h.dir, ".svc", "logs", "svc-agent.log")}\nrunning: no\nlast exit: exit code 1\n`);
  });
});

describe("svc-agent service logs", () => {
  it("prints the last lines of the installed service's log", async () => {
    const h = home();
    const systemctl = fakeTool("systemctl", RUNNING_UNIT);
    const dataDir = join(h.dir, "state");
    const env = { ...h.env, ...systemctl.env };
    await runCli("svc-agent", ["service", "install", "--coordinator", "http://127.0.0.1:8081", "--data-dir", dataDir, "--platform", "linux"], env);
    mkdirSync(join(dataDir, "logs"), { recursive: true });
    writeFileSync(join(dataDir, "logs", "svc-agent.log"), "one\ntwo\nthree\n");
    const result = await runCli("svc-agent", ["service", "logs", "-n", "2", "--platform", "linux"], env);
    expect([result.code, result.stdout, result.stderr]).toEqual([0, "two\nthree\n", ""]);
  });

  it("says where it looked when there is no log yet", async () => {
    const h = home();
    const result = await runCli("svc-agent", ["service", "logs", "--platform", "linux"], h.env);
    expect([result.code, result.stderr]).toEqual([1, `svc-agent: no log at ${join(h.dir, ".svc", "logs", "svc-agent.log")} yet\n`]);
  });
});

// systemd-analyze comes from Debian's systemd package; fail loudly rather than skip when it is missing
execFileSync("systemd-analyze", ["--version"]);
