// Design §6: the auditor's reference pass runs in a child that speaks src/audit/rescore-job.ts's JSON lines. Here a
// stand-in rescorer (a node script, as `--audit-rescorer` would name one) answers as the alias tells it to: honestly,
// by dying, with a line that is not JSON, with another job's id, or not at all. Each failure is "no verdict" for its
// job alone, and the next job gets a fresh child.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RescoreWorker } from "../../../../gateway/audit/rescore-worker.ts";
import type { RescoreJob } from "../../../../src/audit/rescore-job.ts";

const dir = mkdtempSync(join(tmpdir(), "svc-rescorer-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const script = join(dir, "rescorer.mjs");
const argsFile = join(dir, "args.json");
writeFileSync(script, `
import { createInterface } from "node:readline";
import { writeFileSync } from "node:fs";
writeFileSync(${JSON.stringify(argsFile)}, JSON.stringify(process.argv.slice(2)));
for await (const line of createInterface({ input: process.stdin })) {
  const job = JSON.parse(line);
  const honest = { id: job.id, ok: true, prompt_tokens: 3, positions: job.tokens.map((id) => ({ id, ref: -1, top: [[id, -1]] })), ms: 1 };
  if (job.alias === "die") process.exit(3);
  else if (job.alias === "garbage") process.stdout.write("not json\\n");
  else if (job.alias === "wrong-id") process.stdout.write(JSON.stringify({ ...honest, id: "other" }) + "\\n");
  else if (job.alias === "hang") continue;
  else process.stdout.write(JSON.stringify(honest).slice(0, 10)), setTimeout(() => process.stdout.write(JSON.stringify(honest).slice(10) + "\\n"), 5);
}
`);

const job = (id: string, alias = "honest"): RescoreJob => ({ id, alias, request_b64: Buffer.from("{}").toString("base64"), tokens: [5, 6, 7], settings: { threads: 1, batch_size: 512 } });
const worker = (timeoutMs = 60_000) => new RescoreWorker({ command: [process.execPath, script], models: new Map([["qwen3-4b", "/models/a.gguf"]]), threads: 2, catalogPath: "/etc/svc/catalog.json", timeoutMs });

describe("§6 The rescore worker", () => {
  it("sends each job as a line with the models, the gateway's catalog and the threads on the command line, and reads its result back, split across writes", async () => {
    const w = worker();
    const results = await Promise.all([w.score(job("a1")), w.score(job("a2"))]);
    expect(results.map((r) => [r.id, r.ok, r.ok ? r.positions.map((p) => p.id) : []])).toEqual([["a1", true, [5, 6, 7]], ["a2", true, [5, 6, 7]]]);
    expect(JSON.parse(readFileSync(argsFile, "utf8"))).toEqual(["--model", "qwen3-4b=/models/a.gguf", "--catalog", "/etc/svc/catalog.json", "--threads", "2"]);
    await w.close();
  });

  it("a child that dies, writes what is not JSON, or answers another job gives that job no verdict; the next job is scored by a fresh child", async () => {
    const w = worker();
    for (const [alias, why] of [["die", /exited \(code 3\)/], ["garbage", /not JSON/], ["wrong-id", /answered job other/]] as const) {
      const failed = await w.score(job(`x-${alias}`, alias));
      expect(failed.ok).toBe(false);
      expect(!failed.ok && failed.error).toMatch(why);
      expect((await w.score(job(`after-${alias}`))).ok).toBe(true);
    }
    await w.close();
  });

  it("a job that takes longer than the timeout has no verdict; close() answers every job left", async () => {
    const w = worker(300);
    const hung = await w.score(job("h", "hang"));
    expect(!hung.ok && hung.error).toMatch(/more than 300 ms/);
    const waiting = [w.score(job("h2", "hang")), w.score(job("h3"))];
    await w.close();
    expect((await Promise.all(waiting)).map((r) => r.ok)).toEqual([false, false]);
  });
});
