// DESIGN §8, a provider's faults are not advertised: an agent checks each model file against its catalog pin
// (size, then SHA-256) before it advertises the alias. One whose file fails is never routed to; beside a good
// agent every request is served by the good one. Real processes: `svc-gateway serve` and two `svc-agent start`.
import { copyFileSync, openSync, closeSync, writeSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../harness/cli.ts";
import { listProviders, post, startAgent, startGateway, waitForProvider, type AgentProcess, type GatewayProcess } from "../fixtures/gateway.ts";

let gw: GatewayProcess;
let bad: AgentProcess;
let badFile: string;

beforeAll(async () => {
  gw = await startGateway();
  badFile = join(gw.tiny.dir, "eight-bytes.gguf");
  writeFileSync(badFile, "GGUF\0\0\0\0");
  bad = await startAgent(gw.coordinatorUrl, gw.tiny, { args: ["--model", `qwen3-4b=${badFile}`] });
}, 60_000);
afterAll(async () => {
  await bad?.stop();
  await gw?.stop();
});

describe("Faults are not advertised: a model file that fails its pin", () => {
  it("is named in one log line, and the agent advertises nothing for it", async () => {
    const pinned = gw.tiny.files["qwen3-4b"]!.sizeBytes;
    const lines = bad.stdout().split("\n").filter((l) => l.includes("not advertising"));
    expect(lines).toEqual([expect.stringContaining(`not advertising qwen3-4b: ${badFile} is 8 bytes but the catalog pins ${pinned}; refusing to load it`)]);
    expect(bad.stdout()).toContain("advertising []");
    await waitForProvider(gw, bad.providerId, (r) => r !== undefined);
    expect((await listProviders(gw)).find((p) => p.id === bad.providerId)?.model_ids).toEqual([]);
  });

  it("so beside a good agent, 10 of 10 requests are served, all by the good one", async () => {
    const served = await Promise.all(
      Array.from({ length: 10 }, () => post(gw, "/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], max_tokens: 2 })),
    );
    expect(served.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(new Set(served.map((r) => r.headers.get("x-svc-provider")))).toEqual(new Set([gw.providerId]));
  });

  it("and svc-agent doctor names the same file with its fix", async () => {
    const pinned = gw.tiny.files["qwen3-4b"]!.sizeBytes;
    const result = await runCli("svc-agent", [
      "doctor", "--catalog", gw.tiny.catalogPath, "--model", `qwen3-4b=${badFile}`, "--data-dir", bad.dataDir, "--memory-gb", "8", "--coordinator", gw.coordinatorUrl,
    ]);
    expect(result.code).toBe(1);
    expect(result.stdout.split("\n")).toContain(
      `✗ qwen3-4b: ${badFile} is 8 bytes but the catalog pins ${pinned}; refusing to load it (not needed to serve); fix: replace ${badFile} with the file this catalog pins for qwen3-4b`,
    );
  });
});

describe("Faults are not advertised: a model file replaced after start", () => {
  let replaced: AgentProcess;
  let copy: string;
  beforeAll(async () => {
    copy = join(gw.tiny.dir, "replaced.gguf");
    copyFileSync(gw.tiny.files["qwen3-4b"]!.path, copy);
    replaced = await startAgent(gw.coordinatorUrl, gw.tiny, { args: ["--model", `qwen3-4b=${copy}`] });
    await waitForProvider(gw, replaced.providerId, (r) => r?.model_ids.includes("qwen3-4b") === true);
  }, 60_000);
  afterAll(() => replaced?.stop());

  it("is checked again when loaded: the session fails, the alias is withdrawn with one log line, and no caller is routed to it again", async () => {
    // the same size, other bytes: only the SHA-256 can tell (the agent's cache is keyed by size and mtime)
    const fd = openSync(copy, "r+");
    writeSync(fd, Buffer.alloc(64, 0x5a), 0, 64, gw.tiny.files["qwen3-4b"]!.sizeBytes - 64);
    closeSync(fd);
    const res = await post(gw, "/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], max_tokens: 2, provider: replaced.providerId });
    expect(res.status).toBe(502);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("provider_error");
    await waitForProvider(gw, replaced.providerId, (r) => r !== undefined && r.model_ids.length === 0);
    const lines = replaced.stdout().split("\n").filter((l) => l.includes("not advertising"));
    expect(lines).toEqual([expect.stringContaining(`not advertising qwen3-4b: ${copy} has sha256 `)]);
    const served = await Promise.all(Array.from({ length: 4 }, () => post(gw, "/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], max_tokens: 2 })));
    expect(new Set(served.map((r) => r.headers.get("x-svc-provider")))).toEqual(new Set([gw.providerId]));
  }, 60_000);
});
