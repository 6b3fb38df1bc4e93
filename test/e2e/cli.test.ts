// Both command lines behave like tools people already use: `--version`, and a usage error as one line that
// names the flag and points at --help, with exit code 64 (EX_USAGE), never the whole help text; and
// `svc-agent start` refuses, in one line, what it could never serve from.
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../../harness/cli.ts";
import { AGENT_BIN, startProcess, type Proc } from "../../harness/process.ts";
import { tempDir } from "../fixtures/tiny-catalog.ts";

const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };

describe("Command lines", () => {
  it.each(["svc-agent", "svc-gateway"] as const)("%s --version prints the package version", async (bin) => {
    const result = await runCli(bin, ["--version"]);
    expect([result.code, result.stdout, result.stderr]).toEqual([0, `${version}\n`, ""]);
  });

  it.each([
    ["svc-gateway", ["serve", "--nope"], "svc-gateway: unknown option '--nope'; see --help\n"],
    ["svc-gateway", ["providers", "revoke"], "svc-gateway: missing required argument 'id'; see --help\n"],
    ["svc-agent", ["catalog", "--nope"], "svc-agent: unknown option '--nope'; see --help\n"],
    // the mistyped flag first, not the required --coordinator it hides
    ["svc-agent", ["start", "--bogus"], "svc-agent: unknown option '--bogus'; see --help\n"],
    ["svc-agent", ["start"], "svc-agent: required option '--coordinator <url>' not specified; see --help\n"],
    ["svc-agent", ["service", "install", "--bogus"], "svc-agent: unknown option '--bogus'; see --help\n"],
    ["svc-gateway", ["coordinator", "--bogus"], "svc-gateway: unknown option '--bogus'; see --help\n"],
    // catalog's --model is refused as start's is
    ["svc-agent", ["catalog", "--model", "nonsense"], "svc-agent: option '--model <alias=path>' argument 'nonsense' is invalid. expected ALIAS=PATH; see --help\n"],
    [
      "svc-agent",
      ["catalog", "--model", "qwen3-4b=/nonexistent/model.gguf"],
      "svc-agent: option '--model <alias=path>' argument 'qwen3-4b=/nonexistent/model.gguf' is invalid. no file at /nonexistent/model.gguf; see --help\n",
    ],
    ["svc-agent", ["catalog", "--model", "bogus=/dev/null"], "svc-agent: --model bogus=/dev/null: bogus is not a catalog alias; see --help\n"],
    [
      "svc-gateway",
      ["serve", "--admin-emails", "ops@example.org, nope"],
      "svc-gateway: option '--admin-emails <list>' argument 'ops@example.org, nope' is invalid. \"nope\" is not an email address; see --help\n",
    ],
    ["svc-gateway", ["keys", "usage", "--days", "0"], "svc-gateway: option '--days <n>' argument '0' is invalid. expected a positive integer; see --help\n"],
    [
      "svc-agent",
      ["start", "--context-size", "100"],
      "svc-agent: option '--context-size <tokens>' argument '100' is invalid. expected a whole number of tokens, 512 or more; see --help\n",
    ],
  ] as const)("%s %j is one line, exit 64", async (bin, args, line) => {
    const result = await runCli(bin, [...args]);
    expect([result.code, result.stderr, result.stdout]).toEqual([64, line, ""]);
  });

  it("serve --help names every environment variable it reads", async () => {
    const { stdout } = await runCli("svc-gateway", ["serve", "--help"]);
    for (const name of ["SVC_OPERATOR_KEYS", "SVC_OIDC_ISSUER", "SVC_OIDC_CLIENT_ID", "SVC_OIDC_CLIENT_SECRET", "SVC_PUBLIC_URL", "SVC_ADMIN_EMAILS", "SVC_GATEWAY_SECRET"]) {
      expect(stdout).toContain(name);
    }
  });
});

// nothing listens on port 1: the agent keeps reconnecting, which is all these tests need of it
const NO_COORDINATOR = "http://127.0.0.1:1";
const agentArgs = (dataDir: string) => ["start", "--coordinator", NO_COORDINATOR, "--data-dir", dataDir, "--engine", "synthetic"];

describe("svc-agent start: what it refuses", () => {
  const running: Proc[] = [];
  const agent = (dataDir: string) => {
    const proc = startProcess(AGENT_BIN, agentArgs(dataDir));
    running.push(proc);
    return proc;
  };
  afterEach(async () => {
    await Promise.all(running.splice(0).map((p) => p.kill("SIGKILL")));
  });

  it("a --model file that does not exist is a usage error naming the flag and the path", async () => {
    const dataDir = tempDir();
    const result = await runCli("svc-agent", [...agentArgs(dataDir), "--model", "qwen3-4b=/nonexistent/model.gguf"]);
    expect([result.code, result.stdout]).toEqual([64, ""]);
    expect(result.stderr).toBe("svc-agent: option '--model <alias=path>' argument 'qwen3-4b=/nonexistent/model.gguf' is invalid. no file at /nonexistent/model.gguf; see --help\n");
    rmSync(dataDir, { recursive: true });
  });

  it("a --data-dir that cannot be created is one line naming the flag, and the process ends", async () => {
    // /proc/nope once sent Node's recursive mkdir round a loop that never ended, at full CPU, saying nothing
    const result = await runCli("svc-agent", agentArgs("/proc/nope/svc"));
    expect([result.code, result.stdout]).toEqual([1, ""]);
    expect(result.stderr).toBe("svc-agent: --data-dir /proc/nope/svc: cannot create it (ENOENT: no such file or directory, mkdir '/proc/nope')\n");
  }, 20_000);

  it("a second agent on the same data dir exits with one line naming the first one's pid", async () => {
    const dataDir = tempDir();
    const first = agent(dataDir);
    await first.waitFor(/created keys/);
    const second = await runCli("svc-agent", agentArgs(dataDir));
    expect([second.code, second.stdout]).toEqual([1, ""]);
    const lock = join(dataDir, "agent.lock");
    expect(second.stderr).toBe(`svc-agent: another svc-agent is using ${dataDir} (pid ${first.child.pid}); stop it first, or remove ${lock} if that process is not an svc-agent\n`);
    // the refused one left the running one's lock alone, and a graceful stop removes it
    expect(readFileSync(lock, "utf8")).toBe(`${first.child.pid}\n`);
    await first.stop();
    expect(existsSync(lock)).toBe(false);
    rmSync(dataDir, { recursive: true });
  });

  it("a lock left by a killed agent is taken over", async () => {
    const dataDir = tempDir();
    const first = agent(dataDir);
    await first.waitFor(/created keys/);
    await first.kill("SIGKILL");
    expect(readFileSync(join(dataDir, "agent.lock"), "utf8")).toBe(`${first.child.pid}\n`);
    const next = agent(dataDir);
    await next.waitFor(/loaded keys/);
    expect(readFileSync(join(dataDir, "agent.lock"), "utf8")).toBe(`${next.child.pid}\n`);
    await next.stop();
    rmSync(dataDir, { recursive: true });
  });
});
