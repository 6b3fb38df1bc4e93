// The documented pair of commands (`npm run demo`): an operator and a provider as separate processes on one box
// with the tiny demo models, the way `npm start` runs them inside. The test runs exactly the commands the script
// prints, on the free ports it is given with --port and --coordinator-port (issue 44), by the absolute paths it
// prints them with, and then the route examples it prints, as sh runs them, from a folder outside the clone.
import { execFile } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { runNode } from "../../harness/cli.ts";
import { freePort } from "../../harness/ports.ts";
import { startProcess, type Proc } from "../../harness/process.ts";
import { waitForReady } from "../../harness/ready.ts";
import { tempDir } from "../fixtures/tiny-catalog.ts";

const ROOT = new URL("../..", import.meta.url);
const procs: Proc[] = [];
afterAll(() => Promise.all(procs.map((p) => p.stop())));

/** The command line that runs BIN (`…/bin/BIN.js`), split on spaces (the printed paths have none here). */
function commandOf(output: string, bin: string): { env: Record<string, string>; script: string; args: string[] } {
  const line = output.split("\n").find((l) => l.includes(`/bin/${bin}.js `));
  expect(line, `a command for ${bin}`).toBeDefined();
  const words = line!.trim().split(" ");
  const at = words.findIndex((w) => w.endsWith(`/bin/${bin}.js`));
  const env = Object.fromEntries(words.slice(0, at).map((w) => w.split("=") as [string, string]));
  return { env, script: words[at]!, args: words.slice(at + 1) };
}

const demo = (args: string[]) => runNode(["--import", "tsx", "scripts/demo.ts", ...args], { cwd: ROOT });

describe("npm run demo: an operator and a provider as two processes", () => {
  it("writes the demo models and prints commands that, run as printed on the ports given, answer every route", async () => {
    const dir = tempDir();
    const [port, coordinatorPort] = [await freePort(), await freePort()];
    const printed = await demo(["--data-dir", dir, "--port", String(port), "--coordinator-port", String(coordinatorPort)]);
    expect(printed.code, printed.stderr).toBe(0);
    const gateway = commandOf(printed.stdout, "svc-gateway");
    expect(gateway.args).toEqual(expect.arrayContaining(["--port", String(port), "--coordinator-port", String(coordinatorPort)]));
    const gw = startProcess(gateway.script, gateway.args, { env: gateway.env });
    procs.push(gw);
    await waitForReady(gw, "svc-gateway serve");
    const agent = commandOf(printed.stdout, "svc-agent");
    expect(agent.args).toContain(`http://127.0.0.1:${coordinatorPort}`);
    const ag = startProcess(agent.script, [...agent.args, "--threads", "1"], { env: agent.env });
    procs.push(ag);
    expect((await waitForReady(ag, "svc-agent start")).aliases).toEqual(["tiny-random", "tiny-embed"]);
    const key = gateway.env.SVC_OPERATOR_KEYS!;
    // a key made for this run, never on a command line: the curl takes it from the environment through stdin
    expect(key).toMatch(/^sk-svc_op_[A-Za-z0-9_-]{32}$/);
    expect(printed.stdout).toContain(`export SVC_API_KEY=${key}`);
    expect(printed.stdout).not.toContain(`Bearer ${key}`);
    const lines = printed.stdout.split("\n");
    const examples = lines.slice(lines.findIndex((l) => l.includes("export SVC_API_KEY="))).map((l) => l.replace(/^ {3}/, "")).join("\n");
    const elsewhere = tempDir("svc-elsewhere-");
    const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile("sh", ["-ec", examples], { cwd: elsewhere }, (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr })),
    );
    expect(run.code, run.stderr).toBe(0);
    const bodies = [...run.stdout.matchAll(/^\{.*\}$/gm)].map((m) => (JSON.parse(m[0]) as { object: string }).object);
    expect(bodies).toEqual(["chat.completion", "response", "list"]);
    expect(JSON.parse(readFileSync(`${elsewhere}/answer.json`, "utf8"))).toMatchObject({ svc_receipt: { model_id: "tiny-random" } });
    expect(run.stdout).toContain("VALID: receipt rcpt_");
    rmSync(elsewhere, { recursive: true, force: true });
    // two processes started, a model loaded and five examples run: 22 s at a load of 7, past 60 s at 19
  }, 180_000);

  it("an unknown option is one line naming it, `; see --help`, exit 64; --help answers", async () => {
    const bogus = await demo(["--bogus"]);
    expect([bogus.code, bogus.stdout, bogus.stderr]).toEqual([64, "", "npm run demo: unknown option '--bogus'; see --help\n"]);
    const help = await demo(["--help"]);
    expect([help.code, help.stderr]).toEqual([0, ""]);
    expect(help.stdout).toMatch(/--coordinator-port <port>/);
  });
});
