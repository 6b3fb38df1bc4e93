// `svc-agent service install|uninstall|status|logs`: the agent as a per-user service, the way `brew services`
// runs a formula: install takes `start`'s flags, writes the launchd or systemd file and starts it.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { Command, Option } from "commander";
import { DEFAULT_DATA_DIR } from "../../src/process/data-dir.ts";
import { positiveInteger } from "../../src/process/cli-options.ts";
import { addStartOptions, type StartFlags } from "../daemon/start-options.ts";
import { takeSecret } from "../../src/process/secret-option.ts";
import type { Manager, ServicePlatform } from "./manager.ts";
import { SERVICE_NAME, serviceSpec, type GivenOption } from "./spec.ts";

/** `service status`'s exit when the service is not running or not installed, as `systemctl status` has it. */
export const NOT_RUNNING_EXIT = 3;

// hidden: tests print and check the other platform's file
const platformOption = () =>
  new Option("--platform <os>", "darwin (launchd) or linux (systemd)").choices(["darwin", "linux"]).default(process.platform).hideHelp();

/** The launchd and systemd writers, loaded in the actions so that every other command starts without plist's. */
const managers = () => import("./manager.ts");

async function manager(platform: string): Promise<Manager> {
  if (platform !== "darwin" && platform !== "linux") {
    throw new Error(`svc-agent service runs under launchd (macOS) or systemd (Linux), not on ${platform}; run svc-agent start under your own supervisor`);
  }
  const { managerFor } = await managers();
  return managerFor(platform as ServicePlatform, os.homedir(), process.getuid?.() ?? 0);
}

export function addServiceCommand(program: Command): void {
  const service = program
    .command("service")
    .description("run the agent as a per-user service that starts at login and restarts after a crash (launchd on macOS, systemd on Linux)");

  addStartOptions(service.command("install").description("install and start the service with start's flags (logs rotate under DATA_DIR/logs)"))
    .option("--print", "write the service file to stdout instead of installing it")
    .addOption(platformOption())
    .action(async (flags: StartFlags & { print?: boolean; platform: string }, command: Command) => {
      const m = await manager(flags.platform);
      // a --token-file is written as a path and read by the service at each start; a token typed here goes in its environment
      const token = flags.tokenFile === undefined ? takeSecret(command, "--token", "SVC_PROVIDER_TOKEN", "svc-agent") : undefined;
      const given: GivenOption[] = command.options
        .filter((o) => command.getOptionValueSource(o.attributeName()) === "cli" && !["--print", "--platform"].includes(o.long!))
        .map((o) => ({ long: o.long!, value: command.getOptionValue(o.attributeName()) }));
      const spec = serviceSpec({
        node: process.execPath,
        // the script node is running, links resolved: `npx`'s .bin link or a cache path may not outlive the install
        bin: realpathSync(process.argv[1]!),
        given,
        dataDir: flags.dataDir,
        shutdownGraceMs: flags.shutdownGraceMs,
        ...(token !== undefined ? { token } : {}),
        cwd: process.cwd(),
        ...(process.env.PATH ? { path: process.env.PATH } : {}),
      });
      if (flags.print) {
        process.stdout.write(m.render(spec));
        return;
      }
      (await managers()).install(m, spec);
      console.log(`installed ${m.file} and started it with ${m.tool}; it starts at login and restarts after a crash`);
      console.log(`log: ${spec.logFile} (svc-agent service logs)`);
    });

  service
    .command("uninstall")
    .description("stop the service and remove its file")
    .addOption(platformOption())
    .action(async (flags: { platform: string }) => {
      const m = await manager(flags.platform);
      console.log((await managers()).uninstall(m) ? `stopped and removed ${m.file}` : `not installed (no ${m.file})`);
    });

  service
    .command("status")
    .description(`whether the service is installed and running, and how it last exited (exit 0 running, ${NOT_RUNNING_EXIT} not)`)
    .addOption(platformOption())
    .action(async (flags: { platform: string }) => {
      const m = await manager(flags.platform);
      const s = (await managers()).status(m);
      if (!s.installed) {
        console.log(`installed: no (no ${m.file}); install it with svc-agent service install --coordinator URL`);
        process.exitCode = NOT_RUNNING_EXIT;
        return;
      }
      console.log(`installed: ${m.file}`);
      if (s.logFile) console.log(`log: ${s.logFile}`);
      if (s.state instanceof Error) throw new Error(`cannot tell whether it runs: ${s.state.message}`);
      const { loaded, running, pid, lastExit } = s.state;
      console.log(`running: ${running ? `yes${pid ? ` (pid ${pid})` : ""}` : loaded ? "no" : `no, ${m.tool} has not loaded it (svc-agent service install loads it)`}`);
      console.log(`last exit: ${lastExit ?? "none"}`);
      if (!running) process.exitCode = NOT_RUNNING_EXIT;
    });

  service
    .command("logs")
    .description("print the end of the service's log; --follow keeps printing")
    .option("-n, --lines <n>", "how many lines", positiveInteger, 50)
    .option("-f, --follow", "keep printing lines as they come (across rotations), until Ctrl-C")
    .option("--data-dir <dir>", "the data dir, when no service is installed", DEFAULT_DATA_DIR)
    .addOption(platformOption())
    .action(async (flags: { lines: number; follow?: boolean; dataDir: string; platform: string }) => {
      const s = (await managers()).status(await manager(flags.platform));
      const file = (s.installed ? s.logFile : undefined) ?? join(flags.dataDir, "logs", `${SERVICE_NAME}.log`);
      if (!existsSync(file)) throw new Error(`no log at ${file} yet`);
      if (!flags.follow) {
        const lines = readFileSync(file, "utf8").split("\n");
        if (lines.at(-1) === "") lines.pop();
        for (const line of lines.slice(-flags.lines)) console.log(line);
        return;
      }
      // tail -F follows the name, so it carries on into the new file when the agent rotates
      await new Promise<void>((resolve, reject) => {
        const tail = spawn("tail", ["-n", String(flags.lines), "-F", file], { stdio: "inherit" });
        tail.on("error", reject);
        tail.on("close", () => resolve());
      });
    });
}
