// `npm start` (README "Two commands"): brings the service up and prints an example per route, the receipt check,
// doctor and the SDKs, each working as printed, the shell lines from a folder outside the clone (issue 44). Without a
// downloaded model it says it serves the tiny random-weight demo models, one for chat and one for embeddings.
import { execFile } from "node:child_process";
import { readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import { runCli, runNode } from "../../harness/cli.ts";
import { describeProcess, processesMentioning, startProcess, TSX } from "../../harness/process.ts";
import { tempDir } from "../fixtures/tiny-catalog.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SCRIPT = join(ROOT, "scripts", "start.ts");
const home = tempDir();
// not there yet, as ~/.svc on a first `npm start`
const dataDir = join(home, ".svc");
const start = startProcess(SCRIPT, ["--port", "0", "--coordinator-port", "0", "--data-dir", dataDir], {
  nodeArgs: TSX,
  env: { SVC_OPERATOR_KEYS: "" },
  name: "npm start",
});
/** What it printed up to the end of its banner. */
const banner = start.waitFor(/Ctrl-C stops all three\./, 90_000).then(() => start.stdout());
afterAll(async () => {
  await start.stop();
  rmSync(home, { recursive: true, force: true });
});

describe("npm start", () => {
  it("says it runs in demo mode when no catalog model is downloaded, with a chat and an embedding model", async () => {
    const text = await banner;
    expect(text).toContain("DEMO mode");
    expect(text).toMatch(/provider +[0-9a-f]{64} \(separate process, process rung\) advertising \[tiny-random, tiny-embed\]/);
  }, 120_000); // the first to wait for the banner: two tsx processes starting, on a loaded machine

  it("prints an example per route that works as printed from a folder outside the clone: chat, Responses, embeddings, and the receipt check", async () => {
    const text = await banner;
    const elsewhere = tempDir("svc-elsewhere-");
    // the block from `export SVC_API_KEY=…` to the receipt check, run by sh as a reader would paste it
    const block = textBlock(text, /^ {2}export SVC_API_KEY=/, /^ {2}\S+ verify answer\.json --providers \S+$/);
    const run = await runShell(block, elsewhere);
    expect(run.code, run.stderr).toBe(0);
    // chat (tee'd into answer.json), then Responses and embeddings, one JSON body each, then verify's lines
    const saved = JSON.parse(readFileSync(join(elsewhere, "answer.json"), "utf8")) as { object: string; svc_receipt: { model_id: string } };
    expect([saved.object, saved.svc_receipt.model_id]).toEqual(["chat.completion", "tiny-random"]);
    const bodies = [...run.stdout.matchAll(/^\{.*\}$/gm)].map((m) => JSON.parse(m[0]) as { object: string; status?: string; model?: string; data?: { embedding: number[] }[]; svc_receipt?: unknown });
    expect(bodies.map((b) => b.object)).toEqual(["chat.completion", "response", "list"]);
    // the random model may run to max_output_tokens: "incomplete" is an answer too
    expect(bodies[1]).toMatchObject({ status: expect.stringMatching(/^(completed|incomplete)$/), model: "tiny-random", svc_receipt: expect.any(Object) });
    expect(bodies[2]).toMatchObject({ model: "tiny-embed", svc_receipt: expect.any(Object) });
    expect(bodies[2]!.data![0]!.embedding.length).toBeGreaterThan(0);
    expect(run.stdout).toContain("VALID: receipt rcpt_");
    // by absolute path: `npx svc-agent` outside the clone finds no such package (it is not on npm)
    expect(text).not.toContain("npx ");
    rmSync(elsewhere, { recursive: true, force: true });
  });

  it("docs/verifying.md's attestation check passes in the environment the banner leaves (SVC_API_KEY set): the flag wins over it", async () => {
    const text = await banner;
    const key = printedKey(text);
    const base = /base_url="([^"]+)"/.exec(text)![1]!;
    const provider = /provider +([0-9a-f]{64}) /.exec(text)![1]!;
    const record = await fetch(`${base}/providers/${provider}/attestation`, { headers: { authorization: `Bearer ${key}` } });
    const saved = join(dataDir, "att.json");
    writeFileSync(saved, await record.text());
    const verified = await runCli("svc-agent", ["verify", "--attestation", saved], { SVC_API_KEY: key });
    expect([verified.code, verified.stderr]).toEqual([0, ""]);
    expect(verified.stdout).toContain(`VALID: provider ${provider} proves rung process`);
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

  it("prints the doctor command for its agent, and that doctor, run as printed elsewhere, reports the demo ready to serve", async () => {
    const text = await banner;
    const line = text.split("\n").find((l) => / doctor --coordinator /.test(l))!.trim();
    const elsewhere = tempDir("svc-elsewhere-");
    const doctor = await runShell(line, elsewhere);
    expect(doctor.code, doctor.stdout).toBe(0);
    expect(doctor.stdout).toContain("✓ ready to serve: tiny-random");
    expect(doctor.stdout).not.toContain(`${dataDir} has mode`);
    expect(doctor.stdout.trimEnd().split("\n").at(-1)).toBe("ready to serve");
    rmSync(elsewhere, { recursive: true, force: true });
  });

  it("its operator key reads /settings/usage as JSON, as docs/operator-guide.md says: no sign-in here, so 404 sign_in_not_configured", async () => {
    const text = await banner;
    const key = printedKey(text);
    const base = /base_url="([^"]+)\/v1"/.exec(text)![1]!;
    const res = await fetch(`${base}/settings/usage`, { headers: { authorization: `Bearer ${key}` } });
    expect([res.status, res.headers.get("content-type")]).toEqual([404, "application/json"]);
    expect(await res.json()).toEqual({
      error: { message: expect.stringContaining("Sign-in is not configured"), type: "invalid_request_error", code: "sign_in_not_configured", param: null, svc_action: "fix_key" },
    });
  });

  it("prints the Node SDK example first, and it runs as printed where the openai package is (this clone)", async () => {
    const text = await banner;
    const node = textBlock(text, /^ {2}import OpenAI from "openai";$/, /^ {2}console\.log\(/).replace(/^ {2}/gm, "");
    expect(text.indexOf("# Node:")).toBeLessThan(text.indexOf("# Python:"));
    const run = await runNode(["--input-type=module", "-e", node], { cwd: ROOT, env: { SVC_API_KEY: printedKey(text) } });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/signature: '[0-9a-f]{128}'/);
  });

  it("an unknown option is one line naming it, `; see --help`, exit 64, as the bins' are", async () => {
    const bogus = await runNode([...TSX, SCRIPT, "--bogus"], { cwd: ROOT });
    expect([bogus.code, bogus.stdout, bogus.stderr]).toEqual([64, "", "npm start: unknown option '--bogus'; see --help\n"]);
  });

  it("prints Python SDK settings (base_url, api_key, model) that work with an OpenAI SDK", async () => {
    const text = await banner;
    const [, baseURL] = /OpenAI\(base_url="([^"]+)", api_key=os\.environ\["SVC_API_KEY"\]\)/.exec(text)!;
    const apiKey = printedKey(text);
    const model = /create\(model="([^"]+)"/.exec(text)![1]!;
    const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
    const r = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Say hello." }], max_tokens: 8 });
    expect(r.choices[0]?.message.role).toBe("assistant");
  });
});

/** The banner's lines from the one matching `from` to the next one matching `to`, both included. */
function textBlock(text: string, from: RegExp, to: RegExp): string {
  const lines = text.split("\n");
  const first = lines.findIndex((l) => from.test(l));
  const last = lines.findIndex((l, i) => i >= first && to.test(l));
  expect([first, last].every((i) => i >= 0), `${from} … ${to}`).toBe(true);
  return lines.slice(first, last + 1).join("\n");
}

/** The API key npm start prints, as the line a reader pastes to put it in the environment. */
const printedKey = (text: string) => /^ {2}export SVC_API_KEY=(\S+)$/m.exec(text)![1]!;

/** `sh -c script` in `cwd`, as a reader's shell would run pasted lines there; `set -e`, so a failing line fails it. */
function runShell(script: string, cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("sh", ["-ec", script], { cwd }, (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr }));
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
