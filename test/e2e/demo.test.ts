// The documented pair of commands (`npm run demo`): an operator and a provider as separate processes on one box
// with the tiny demo model, the way `npm start` runs them inside. The test runs exactly the commands the script
// prints (through the same bins), on free ports instead of 8080/8081, and gets an answer from them.
import { afterAll, describe, expect, it } from "vitest";
import { runNode } from "../../harness/cli.ts";
import { freePort } from "../../harness/ports.ts";
import { AGENT_BIN, GATEWAY_BIN, startProcess, type Proc } from "../../harness/process.ts";
import { waitForReady } from "../../harness/ready.ts";
import { tempDir } from "../fixtures/tiny-catalog.ts";

const procs: Proc[] = [];
afterAll(() => Promise.all(procs.map((p) => p.stop())));

/** The command line after `npx BIN`, split on spaces (the printed paths have none here). */
function argsOf(output: string, bin: string): { env: Record<string, string>; args: string[] } {
  const line = output.split("\n").find((l) => l.includes(`npx ${bin} `));
  expect(line, `a command for ${bin}`).toBeDefined();
  const [before, after] = line!.trim().split(`npx ${bin} `);
  const env = Object.fromEntries(before!.split(" ").filter((w) => w.includes("=")).map((w) => w.split("=") as [string, string]));
  return { env, args: after!.split(" ") };
}

describe("npm run demo: an operator and a provider as two processes", () => {
  it("writes the demo model and prints two commands that, run as printed, answer a completion", async () => {
    const dir = tempDir();
    const printed = await runNode(["--import", "tsx", "scripts/demo.ts", "--data-dir", dir], { cwd: new URL("../..", import.meta.url) });
    expect(printed.code, printed.stderr).toBe(0);
    const [port, coordinatorPort] = [await freePort(), await freePort()];
    const gateway = argsOf(printed.stdout, "svc-gateway");
    const gw = startProcess(GATEWAY_BIN, [...gateway.args, "--port", String(port), "--coordinator-port", String(coordinatorPort)], { env: gateway.env });
    procs.push(gw);
    await waitForReady(gw, "svc-gateway serve");
    const agent = argsOf(printed.stdout, "svc-agent");
    const agentArgs = agent.args.map((a) => (a === "http://127.0.0.1:8081" ? `http://127.0.0.1:${coordinatorPort}` : a));
    const ag = startProcess(AGENT_BIN, [...agentArgs, "--threads", "1"], { env: agent.env });
    procs.push(ag);
    await waitForReady(ag, "svc-agent start");
    const key = gateway.env.SVC_OPERATOR_KEYS!;
    // a key made for this run, never on a command line: the curl takes it from the environment through stdin
    expect(key).toMatch(/^sk-svc_op_[A-Za-z0-9_-]{32}$/);
    expect(printed.stdout).toContain(`export SVC_API_KEY=${key}`);
    expect(printed.stdout).not.toContain(`Bearer ${key}`);
    await expect
      .poll(async () => {
        const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ messages: [{ role: "user", content: "Hi" }], max_tokens: 8 }),
        });
        return res.status;
      }, { timeout: 20_000 })
      .toBe(200);
  });
});
