// `svc-agent pull` (issue: foundation) against a local model-hub server: resume, verification, mismatch.
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../../harness/cli.ts";
import { makeTinyCatalog, tempDir } from "../fixtures/tiny-catalog.ts";

type Mode = "normal" | "corrupt" | "cut" | "ignore-range";

describe("svc-agent pull", () => {
  const tiny = makeTinyCatalog([{ alias: "qwen3-4b", seed: 11 }]);
  const entry = tiny.catalog.models[0]!;
  const bytes = readFileSync(tiny.files["qwen3-4b"]!.path);
  const requests: { url: string; range?: string }[] = [];
  let mode: Mode = "normal";
  let server: Server;
  let hubUrl = "";
  let modelsDir = "";

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res) => {
      requests.push({ url: req.url ?? "", range: req.headers.range });
      // the pinned file, at the repo's top or in a folder of it
      if (![entry.file, `q4/${entry.file}`].some((file) => req.url === `/${entry.hub_id}/resolve/${entry.revision}/${file}`)) {
        res.writeHead(404).end("not found");
        return;
      }
      const body = mode === "corrupt" ? Buffer.from(bytes.map((b, i) => (i === 1000 ? b ^ 0xff : b))) : bytes;
      const match = /^bytes=(\d+)-$/.exec(req.headers.range ?? "");
      const start = match && mode !== "ignore-range" ? Number(match[1]) : 0;
      res.writeHead(start > 0 ? 206 : 200, {
        "content-length": body.length - start,
        ...(start > 0 ? { "content-range": `bytes ${start}-${body.length - 1}/${body.length}` } : {}),
      });
      if (mode === "cut") {
        // the first 100 kB, then the connection closes short of content-length: ended, not reset, so the
        // bytes already sent arrive however late the client reads them
        res.write(body.subarray(start, start + 100_000), () => res.socket?.end());
        return;
      }
      res.end(body.subarray(start));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    hubUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    server.close();
    tiny.cleanup();
  });
  beforeEach(() => {
    requests.length = 0;
    mode = "normal";
    modelsDir = tempDir();
  });

  const pull = () =>
    runCli("svc-agent", ["pull", "qwen3-4b", "--catalog", tiny.catalogPath, "--models-dir", modelsDir, "--hub-url", hubUrl, "--data-dir", join(modelsDir, "state")]);
  const target = () => join(modelsDir, entry.file);
  const sha = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

  it("downloads the pinned file at the pinned revision and verifies it", async () => {
    const result = await pull();
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`qwen3-4b: downloaded and verified (sha256 ${entry.sha256})`);
    expect(requests).toEqual([{ url: `/${entry.hub_id}/resolve/${entry.revision}/${entry.file}`, range: undefined }]);
    expect(sha(target())).toBe(entry.sha256);
    expect(existsSync(`${target()}.partial`)).toBe(false);

    const again = await pull();
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("already present and verified");
    expect(requests).toHaveLength(1);
  });

  it("a first pull on a fresh machine makes the data dir that holds the models dir (as ~/.svc does) private: 0700", async () => {
    const dataDir = join(modelsDir, ".svc");
    const result = await runCli("svc-agent", ["pull", "qwen3-4b", "--catalog", tiny.catalogPath, "--models-dir", join(dataDir, "models"), "--hub-url", hubUrl, "--data-dir", dataDir]);
    expect([result.code, result.stderr]).toEqual([0, ""]);
    // svc-agent doctor flags anything looser: the agent's keys go here
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
  });

  it("resumes a partial download with a Range request", async () => {
    writeFileSync(`${target()}.partial`, bytes.subarray(0, 150_000));
    const result = await pull();
    expect(result.code).toBe(0);
    expect(result.stderr).toContain("resuming tiny-qwen3-4b.gguf at byte 150000");
    expect(requests[0]?.range).toBe("bytes=150000-");
    expect(sha(target())).toBe(entry.sha256);
  });

  it("an interrupted download keeps its partial, and the next pull finishes it", async () => {
    mode = "cut";
    const cut = await pull();
    expect(cut.code).toBe(1);
    expect(cut.stderr).toMatch(/download interrupted after \d+ bytes .*run pull again to resume/);
    const kept = statSync(`${target()}.partial`).size;
    expect(kept).toBeGreaterThan(0);
    expect(existsSync(target())).toBe(false);

    mode = "normal";
    const resumed = await pull();
    expect(resumed.code).toBe(0);
    expect(requests.at(-1)?.range).toBe(`bytes=${kept}-`);
    expect(sha(target())).toBe(entry.sha256);
  });

  it("starts over when the server ignores the range", async () => {
    writeFileSync(`${target()}.partial`, Buffer.alloc(5000, 7)); // not even a true prefix
    mode = "ignore-range";
    const result = await pull();
    expect(result.code).toBe(0);
    expect(result.stderr).toContain("the server ignored the resume request; starting over");
    expect(sha(target())).toBe(entry.sha256);
  });

  it("a hash mismatch deletes the partial and exits non-zero with a clear message", async () => {
    mode = "corrupt";
    const result = await pull();
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `svc-agent: qwen3-4b: downloaded ${entry.size_bytes} bytes with sha256 `,
    );
    expect(result.stderr).toContain(`but the catalog pins ${entry.size_bytes} bytes with sha256 ${entry.sha256}. The partial download was deleted.`);
    expect(existsSync(`${target()}.partial`)).toBe(false);
    expect(existsSync(target())).toBe(false);
  });

  it("a catalog whose hub_id climbs out of its repo (../..) is refused at load, naming the alias; the hub is never asked", async () => {
    const climbing = join(modelsDir, "climbing.json");
    writeFileSync(climbing, JSON.stringify({ ...tiny.catalog, models: [{ ...entry, hub_id: "../.." }] }));
    const result = await runCli("svc-agent", ["pull", "qwen3-4b", "--catalog", climbing, "--models-dir", modelsDir, "--hub-url", hubUrl]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`svc-agent: ${climbing}: models[0].hub_id: alias qwen3-4b: "../.." is not a model-hub id: expected owner/name such as Qwen/Qwen3-4B-GGUF, of letters, digits, ".", "_" and "-", each segment starting with a letter or digit, and no ".."\n`);
    expect(requests).toEqual([]);
  });

  it("a file in a folder of the repo is fetched from that folder into the same folder under the models dir", async () => {
    const nested = join(modelsDir, "nested.json");
    writeFileSync(nested, JSON.stringify({ ...tiny.catalog, models: [{ ...entry, file: `q4/${entry.file}` }] }));
    const result = await runCli("svc-agent", ["pull", "qwen3-4b", "--catalog", nested, "--models-dir", modelsDir, "--hub-url", hubUrl, "--data-dir", join(modelsDir, "state")]);
    expect(result.code, result.stderr).toBe(0);
    expect(requests.map((r) => r.url)).toEqual([`/${entry.hub_id}/resolve/${entry.revision}/q4/${entry.file}`]);
    expect(sha(join(modelsDir, "q4", entry.file))).toBe(entry.sha256);
  });

  it("an unknown alias or unreachable hub exits non-zero", async () => {
    const unknown = await runCli("svc-agent", ["pull", "qwen9", "--catalog", tiny.catalogPath, "--models-dir", modelsDir]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("svc-agent: qwen9 is not in the catalog (aliases: qwen3-4b)");
    const down = await runCli("svc-agent", ["pull", "qwen3-4b", "--catalog", tiny.catalogPath, "--models-dir", modelsDir, "--hub-url", "http://127.0.0.1:9"]);
    expect(down.code).toBe(1);
    expect(down.stderr).toContain("svc-agent: cannot reach http://127.0.0.1:9/");
  });
});
