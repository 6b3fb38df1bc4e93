// `svc-agent catalog` (issue: foundation; SPEC §2.6, §4.4 body shape as DESIGN §3 fixes it).
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { catalogBody } from "../../src/catalog.ts";
import { loadCatalog } from "../../src/catalog-file.ts";
import { runCli } from "../../harness/cli.ts";
import { makeTinyCatalog, tempDir } from "../fixtures/tiny-catalog.ts";

describe("svc-agent catalog", () => {
  const empty = tempDir();

  it("prints the bundled catalog as a table with what this machine lacks, and the pull that fetches it there", async () => {
    const result = await runCli("svc-agent", ["catalog", "--models-dir", empty, "--memory-gb", "12"]);
    expect(result.code).toBe(0);
    expect(result.stdout.trimEnd().split("\n")).toEqual([
      "ALIAS                 HUB ID                          REVISION  SIZE      MIN MEMORY  LICENSE     THIS MACHINE (12 GB)",
      `qwen3-4b (default)    Qwen/Qwen3-4B-GGUF              bc64014   2.50 GB   10 GB       Apache-2.0  not downloaded (svc-agent pull qwen3-4b --models-dir ${empty})`,
      `qwen3-8b              Qwen/Qwen3-8B-GGUF              7c41481   5.03 GB   14 GB       Apache-2.0  not downloaded (svc-agent pull qwen3-8b --models-dir ${empty}); needs 14 GB of memory`,
      `qwen3-embedding-0.6b  Qwen/Qwen3-Embedding-0.6B-GGUF  370f27d   639.2 MB  2 GB        Apache-2.0  not downloaded (svc-agent pull qwen3-embedding-0.6b --models-dir ${empty})`,
      `qwen3-embedding-4b    Qwen/Qwen3-Embedding-4B-GGUF    f460253   2.50 GB   6 GB        Apache-2.0  not downloaded (svc-agent pull qwen3-embedding-4b --models-dir ${empty})`,
      `qwen3-embedding-8b    Qwen/Qwen3-Embedding-8B-GGUF    69d0e58   4.68 GB   10 GB       Apache-2.0  not downloaded (svc-agent pull qwen3-embedding-8b --models-dir ${empty})`,
    ]);
  });

  it("never suggests a pull that fails: an alias pull cannot fetch (the demo's tiny-random) gets the missing path instead", async () => {
    // `npm start`'s demo catalog, as `catalog --catalog` or `--coordinator` reads it: its model is on no hub
    const demo = makeTinyCatalog([{ alias: "tiny-random", seed: 7 }, { alias: "qwen3-4b", seed: 8 }]);
    const result = await runCli("svc-agent", ["catalog", "--catalog", demo.catalogPath, "--models-dir", empty]);
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines[1]).toMatch(/^tiny-random \(default\) /);
    expect(lines[1]?.endsWith(`not downloaded (no file at ${join(empty, "tiny-tiny-random.gguf")})`)).toBe(true);
    // the same alias as the bundled catalog's, pinned to another file: pull would fetch the bundled one
    expect(lines[2]).toMatch(/^qwen3-4b /);
    expect(lines[2]?.endsWith(`not downloaded (no file at ${join(empty, "tiny-qwen3-4b.gguf")})`)).toBe(true);
    expect(result.stdout).not.toContain("svc-agent pull");
    demo.cleanup();
  });

  it("says ready when the file is present (or given with --model) and memory fits", async () => {
    const tiny = makeTinyCatalog([
      { alias: "small", seed: 1, min_memory_gb: 2 },
      { alias: "big", seed: 2, min_memory_gb: 64 },
      { alias: "elsewhere", seed: 3 },
    ]);
    const elsewhere = join(empty, "moved.gguf");
    writeFileSync(elsewhere, "x");
    const result = await runCli("svc-agent", [
      "catalog", "--catalog", tiny.catalogPath, "--models-dir", tiny.modelsDir, "--memory-gb", "8", "--model", `elsewhere=${elsewhere}`,
    ]);
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines[1]).toMatch(/^small \(default\) .* ready$/);
    expect(lines[2]).toMatch(/^big .* needs 64 GB of memory$/);
    expect(lines[3]).toMatch(/^elsewhere .* ready$/);
    tiny.cleanup();
  });

  it("--json prints the GET /v1/catalog body", async () => {
    const result = await runCli("svc-agent", ["catalog", "--json"]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(catalogBody(loadCatalog()));
  });

  describe("--coordinator URL reads the catalog from a running coordinator", () => {
    const tiny = makeTinyCatalog([{ alias: "remote-only", seed: 4 }]);
    let server: Server;
    let url = "";
    const paths: string[] = [];
    beforeAll(async () => {
      server = createServer((req, res) => {
        paths.push(req.url ?? "");
        if (req.url === "/v1/catalog") res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(catalogBody(tiny.catalog)));
        else res.writeHead(404).end();
      });
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => {
      server.close();
      tiny.cleanup();
    });

    it("prints what the coordinator serves", async () => {
      const result = await runCli("svc-agent", ["catalog", "--coordinator", url, "--json"]);
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual(catalogBody(tiny.catalog));
      expect(paths).toContain("/v1/catalog");
    });

    it("an unreachable coordinator is a clear error", async () => {
      const result = await runCli("svc-agent", ["catalog", "--coordinator", "http://127.0.0.1:9"]);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^svc-agent: cannot reach the coordinator at http:\/\/127\.0\.0\.1:9\/v1\/catalog: /);
    });
  });

  it("--catalog FILE with a bad entry names the file and the field", async () => {
    const bad = join(empty, "bad.json");
    const catalog = loadCatalog();
    writeFileSync(bad, JSON.stringify({ version: 1, default: "qwen3-4b", models: [{ ...catalog.models[0], sha256: "nope" }] }));
    const result = await runCli("svc-agent", ["catalog", "--catalog", bad]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`svc-agent: ${bad}: models[0].sha256: expected 64 lowercase hex characters\n`);
  });
});
