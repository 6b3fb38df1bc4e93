// `npm start` (README "Two commands"): brings the service up and prints a curl and an SDK example that work
// as printed. Without a downloaded model it says it serves the tiny random-weight demo model.
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../../harness/cli.ts";
import { startProcess, TSX } from "../../harness/process.ts";
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
    const url = /curl (\S+) \\/.exec(text)?.[1];
    const headers = [...text.matchAll(/-H "([^:]+): ([^"]+)"/g)].map((m) => [m[1]!, m[2]!] as [string, string]);
    const body = /-d '([^']+)'/.exec(text)?.[1];
    const res = await fetch(url!, { method: "POST", headers: Object.fromEntries(headers), body });
    expect(res.status).toBe(200);
    const saved = await res.text();
    const answer = JSON.parse(saved) as { choices: { message: { content: string } }[]; svc_receipt: { model_id: string } };
    expect(answer.svc_receipt.model_id).toBe("tiny-random");
    // and the receipt check it prints next, its key in the environment rather than on the command line
    const [, key, rest] = /SVC_API_KEY=(\S+) npx svc-agent verify (.+)/.exec(text)!;
    const [file, ...flags] = rest!.split(" ");
    expect(flags).not.toContain(key);
    writeFileSync(join(dataDir, file!), saved);
    const verified = await runCli("svc-agent", ["verify", join(dataDir, file!), ...flags], { SVC_API_KEY: key! });
    expect(verified.code, verified.stdout).toBe(0);
    expect(verified.stdout).toContain("VALID: receipt rcpt_");
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
    const key = /api_key="([^"]+)"/.exec(text)![1]!;
    const base = /base_url="([^"]+)\/v1"/.exec(text)![1]!;
    const res = await fetch(`${base}/settings/usage`, { headers: { authorization: `Bearer ${key}` } });
    expect([res.status, res.headers.get("content-type")]).toEqual([404, "application/json"]);
    expect(await res.json()).toEqual({
      error: { message: expect.stringContaining("no usage is counted"), type: "invalid_request_error", code: "sign_in_not_configured", param: null, svc_action: "fix_key" },
    });
  });

  it("prints SDK settings (base_url, api_key, model) that work with the OpenAI SDK", async () => {
    const text = await banner;
    const [, baseURL, apiKey] = /OpenAI\(base_url="([^"]+)", api_key="([^"]+)"\)/.exec(text)!;
    const model = /create\(model="([^"]+)"/.exec(text)![1]!;
    const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
    const r = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Say hello." }], max_tokens: 8 });
    expect(r.choices[0]?.message.role).toBe("assistant");
  });
});

/** Live processes whose command line mentions `text` (this test's own data dir). */
function processesMentioning(text: string): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(text);
      } catch {
        return false; // it exited while we looked
      }
    })
    .map(Number);
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
    await expect.poll(() => processesMentioning(dataDir), { timeout: 10_000, interval: 100 }).toEqual([]);
    expect(await enrollmentTokens()).toEqual([expect.objectContaining({ name: "npm start agent", revokedAt: expect.any(Number) })]);
  });
});
