// `npm start` (README "Two commands"): brings the service up and prints a curl and an SDK example that work
// as printed. Without a downloaded model it says it serves the tiny random-weight demo model.
import { execFile } from "node:child_process";
import { readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../../harness/cli.ts";
import { describeProcess, processesMentioning, startProcess, TSX } from "../../harness/process.ts";
import { tempDir } from "../fixtures/tiny-catalog.ts";

const SCRIPT = fileURLToPath(new URL("../../scripts/start.ts", import.meta.url));
const home = tempDir();
// not there yet, as ~/.svc on a first `npm start`
const dataDir = join(home, ".svc");
const start = startProcess(SCRIPT, ["--port", "0", "--coordinator-port", "0", "--data-dir", dataDir], {
  nodeArgs: TSX,
  env: { SVC_OPERATOR_KEYS: "" },
  name: "npm start",
});
/** What it printed up to the end of its banner. */
const banner = start.waitFor(/Ctrl-C stops all three\./, 30_000).then(() => start.stdout());
afterAll(async () => {
  await start.stop();
  rmSync(home, { recursive: true, force: true });
});

describe("npm start", () => {
  it("says it runs in demo mode when no catalog model is downloaded", async () => {
    const text = await banner;
    expect(text).toContain("DEMO mode");
    expect(text).toMatch(/provider +[0-9a-f]{64} \(separate process, process rung\) advertising \[tiny-random\]/);
  });

  it("prints a curl command that works as printed, and a receipt check that passes on its answer", async () => {
    const text = await banner;
    const saved = join(dataDir, "answer.json");
    // the lines from `export SVC_API_KEY=…` to the curl's body, run by sh as a reader would paste them
    const lines = text.split("\n");
    const from = lines.findIndex((l) => l.startsWith("  export SVC_API_KEY="));
    const curl = lines.slice(from, from + 3).join("\n");
    expect(curl).toMatch(/^ {2}export SVC_API_KEY=\S+\n {2}printf .*\| curl \S+ -H @- \\\n {4}-H "Content-Type: application\/json" -d '[^']+'$/);
    const res = await runShell(`${curl} > ${saved}`);
    expect(res.code, res.stderr).toBe(0);
    const answer = JSON.parse(readFileSync(saved, "utf8")) as { choices: { message: { content: string } }[]; svc_receipt: { model_id: string } };
    expect(answer.svc_receipt.model_id).toBe("tiny-random");
    // and the receipt check it prints next, with the key from the environment as the export above leaves it
    const [file, ...flags] = /npx svc-agent verify (.+)/.exec(text)![1]!.split(" ");
    expect(file).toBe("answer.json");
    const verified = await runCli("svc-agent", ["verify", saved, ...flags], { SVC_API_KEY: printedKey(text) });
    expect(verified.code, verified.stdout).toBe(0);
    expect(verified.stdout).toContain("VALID: receipt rcpt_");
  });

  it("puts the key on no command line it prints: only in the environment and on stdin", async () => {
    const text = await banner;
    const key = printedKey(text);
    // the one line that shows it, and the shell builtin that puts it in the environment (no process of its own)
    const carrying = text.split("\n").filter((l) => l.includes(key));
    expect(carrying).toEqual([expect.stringMatching(/^ {2}API key {6}sk-svc_op_\S+ \(generated/), `  export SVC_API_KEY=${key}`]);
  });

  it("makes its data dir private to its owner (0700): it holds the agent's keys", async () => {
    await banner;
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
  });

  it("prints the doctor command for its agent, and that doctor reports the demo ready to serve", async () => {
    const text = await banner;
    const flags = /npx svc-agent doctor (.+)/.exec(text)![1]!.split(" ");
    const doctor = await runCli("svc-agent", ["doctor", ...flags]);
    expect(doctor.code, doctor.stdout).toBe(0);
    expect(doctor.stdout).toContain("✓ ready to serve: tiny-random");
    expect(doctor.stdout).not.toContain(`${dataDir} has mode`);
    expect(doctor.stdout.trimEnd().split("\n").at(-1)).toBe("ready to serve");
  });

  it("its operator key reads /settings/usage as JSON, as docs/operator-guide.md says: no sign-in here, so 404 sign_in_not_configured", async () => {
    const text = await banner;
    const key = printedKey(text);
    const base = /base_url="([^"]+)\/v1"/.exec(text)![1]!;
    const res = await fetch(`${base}/settings/usage`, { headers: { authorization: `Bearer ${key}` } });
    expect([res.status, res.headers.get("content-type")]).toEqual([404, "application/json"]);
    expect(await res.json()).toEqual({
      error: { message: expect.stringContaining("no usage is counted"), type: "invalid_request_error", code: "sign_in_not_configured", param: null, svc_action: "fix_key" },
    });
  });

  it("prints SDK settings (base_url, api_key, model) that work with the OpenAI SDK", async () => {
    const text = await banner;
    const [, baseURL] = /OpenAI\(base_url="([^"]+)", api_key=os\.environ\["SVC_API_KEY"\]\)/.exec(text)!;
    const apiKey = printedKey(text);
    const model = /create\(model="([^"]+)"/.exec(text)![1]!;
    const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
    const r = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Say hello." }], max_tokens: 8 });
    expect(r.choices[0]?.message.role).toBe("assistant");
  });
});

/** The API key npm start prints, as the line a reader pastes to put it in the environment. */
const printedKey = (text: string) => /^ {2}export SVC_API_KEY=(\S+)$/m.exec(text)![1]!;

/** `sh -c script`, as a reader's shell would run pasted lines. */
function runShell(script: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    execFile("sh", ["-c", script], (err, _stdout, stderr) => resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stderr }));
  });
}

/** The gateway's enrollment tokens, as `svc-gateway providers list --json` prints them. */
async function enrollmentTokens(): Promise<{ name: string; revokedAt: number | null }[]> {
  const listed = await runCli("svc-gateway", ["providers", "list", "--json", "--data-dir", join(dataDir, "gateway")]);
  expect(listed.code, listed.stderr).toBe(0);
  return JSON.parse(listed.stdout) as { name: string; revokedAt: number | null }[];
}

describe("npm start: Ctrl-C", () => {
  it("stops gateway, coordinator and agent, and revokes the enrollment token it made for its agent", async () => {
    await banner;
    expect(await enrollmentTokens()).toEqual([expect.objectContaining({ name: "npm start agent", revokedAt: null })]);
    expect(processesMentioning(dataDir).length).toBeGreaterThanOrEqual(2); // the script and its agent
    await start.kill("SIGINT");
    await expect.poll(() => processesMentioning(dataDir).map(describeProcess), { timeout: 10_000, interval: 100 }).toEqual([]);
    expect(await enrollmentTokens()).toEqual([expect.objectContaining({ name: "npm start agent", revokedAt: expect.any(Number) })]);
  });
});
