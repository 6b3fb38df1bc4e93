// `npm start` (README "Two commands"): brings the service up and prints a curl and an SDK example that work
// as printed. Without a downloaded model it says it serves the tiny random-weight demo model.
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../../harness/cli.ts";
import { startProcess, TSX } from "../../harness/process.ts";
import { tempDir } from "../fixtures/tiny-catalog.ts";

const SCRIPT = fileURLToPath(new URL("../../scripts/start.ts", import.meta.url));
const dataDir = tempDir();
const start = startProcess(SCRIPT, ["--port", "0", "--coordinator-port", "0", "--data-dir", dataDir], {
  nodeArgs: TSX,
  env: { SVC_OPERATOR_KEYS: "" },
  name: "npm start",
});
/** What it printed up to the end of its banner. */
const banner = start.waitFor(/Ctrl-C stops all three\./, 30_000).then(() => start.stdout());
afterAll(async () => {
  await start.stop();
  rmSync(dataDir, { recursive: true, force: true });
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
    // and the receipt check it prints next
    const [file, ...flags] = /npx svc-agent verify (.+)/.exec(text)![1]!.split(" ");
    writeFileSync(join(dataDir, file!), saved);
    const verified = await runCli("svc-agent", ["verify", join(dataDir, file!), ...flags]);
    expect(verified.code, verified.stdout).toBe(0);
    expect(verified.stdout).toContain("VALID: receipt rcpt_");
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

describe("npm start: Ctrl-C", () => {
  it("stops gateway, coordinator and agent", async () => {
    await banner;
    expect(processesMentioning(dataDir).length).toBeGreaterThanOrEqual(2); // the script and its agent
    await start.kill("SIGINT");
    await expect.poll(() => processesMentioning(dataDir), { timeout: 10_000, interval: 100 }).toEqual([]);
  });
});
