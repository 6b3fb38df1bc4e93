// `svc-agent doctor` as a provider runs it: a real process against the tiny-model catalog and a real
// coordinator (with a release key and a test attestation CA), once where everything holds and once where
// the model file, the coordinators, the attestor and the key modes are each wrong in their own way.
import type { Check } from "../../agent/doctor/check.ts";
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadOrCreateKeys } from "../../agent/daemon/identity.ts";
import { Signer } from "../../src/crypto/signing.ts";
import { runCli } from "../../harness/cli.ts";
import { startCluster, type Cluster } from "../fixtures/cluster.ts";
import { freePort } from "../../harness/ports.ts";
import { makeTinyCatalog, type TinyCatalog } from "../fixtures/tiny-catalog.ts";

let cluster: Cluster;
let other: TinyCatalog;
beforeAll(async () => {
  cluster = await startCluster();
  // the same alias pinned to another file: what an agent on an older or newer release would hold
  other = makeTinyCatalog([{ alias: "qwen3-4b", seed: 9 }]);
});
afterAll(async () => {
  await cluster?.stop();
  other?.cleanup();
});

/** `--json` prints the checks as the module builds them. */
type JsonCheck = Check;

const base = (tiny: TinyCatalog, dataDir: string) => ["doctor", "--catalog", tiny.catalogPath, "--models-dir", tiny.modelsDir, "--data-dir", dataDir, "--memory-gb", "8"];

describe("svc-agent doctor", () => {
  it("passes every check on a machine set up to serve, and --json says what it saw", async () => {
    const { tiny, ca } = cluster;
    const result = await runCli("svc-agent", [
      ...base(tiny, join(tiny.dir, "doctor-ok")), "--coordinator", cluster.coordinator.url, "--json",
      "--release-manifest", cluster.manifestPath, "--release-keys", join(tiny.dir, "release-keys.txt"),
      "--attestor", ca.attestor(), "--roots", ca.rootsDir,
    ], { SVC_PROVIDER_TOKEN: "" });
    expect([result.code, result.stderr]).toEqual([0, ""]);
    const { ready, checks } = JSON.parse(result.stdout) as { ready: boolean; checks: JsonCheck[] };
    expect(ready).toBe(true);
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    const by = (id: string) => checks.find((c) => c.id === id)!;
    // no token, but the coordinator admits the hardware rung without one
    expect(by("enrollment").line).toBe("no enrollment token needed at the hardware rung");
    expect(by("llama").data).toMatchObject({ backend: expect.stringMatching(/^(CPU|Metal|CUDA|Vulkan)$/) });
    expect(by("fit").data).toEqual({ memory_gb: 8, fit: ["qwen3-4b"], too_big: ["qwen3-8b"] });
    expect(by("model:qwen3-4b").data).toEqual({ path: join(tiny.modelsDir, "tiny-qwen3-4b.gguf"), present: true, sha256: tiny.files["qwen3-4b"]!.sha256 });
    expect(by("serving").data).toEqual({ aliases: ["qwen3-4b"] });
    expect(by(`catalog:${cluster.coordinator.url}`).ok).toBe(true);
    expect(Math.abs(by(`clock:${cluster.coordinator.url}`).data!.skew_s as number)).toBeLessThan(2);
    expect(by("attestor").line).toContain(`verifies against the roots in ${ca.rootsDir}`);
    expect(by("rung").data).toEqual({ rung: "hardware", refusals: [], assumed: [] });
  });

  it("says what is wrong, one line each with the fix, and exits 1", async () => {
    const { tiny, ca } = cluster;
    // a model file of the right size with one byte changed
    const models = join(tiny.dir, "broken-models");
    mkdirSync(models);
    const file = join(models, "tiny-qwen3-4b.gguf");
    copyFileSync(join(tiny.modelsDir, "tiny-qwen3-4b.gguf"), file);
    const bytes = readFileSync(file);
    bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 1;
    writeFileSync(file, bytes);
    // keys another user could read
    const dataDir = join(tiny.dir, "doctor-broken");
    await loadOrCreateKeys(dataDir);
    chmodSync(join(dataDir, "agent-keys.json"), 0o644);
    // a release key the manifest was not signed by
    const keysFile = join(tiny.dir, "other-release-keys.txt");
    writeFileSync(keysFile, `${Signer.fromSeed(Buffer.alloc(32, 9)).publicKey}\n`);
    const closed = `http://127.0.0.1:${await freePort()}`;

    const result = await runCli("svc-agent", [
      "doctor", "--catalog", tiny.catalogPath, "--models-dir", models, "--data-dir", dataDir, "--memory-gb", "8",
      "--coordinator", closed, "--release-manifest", cluster.manifestPath, "--release-keys", keysFile,
      "--attestor", ca.attestor("unbound"), "--roots", ca.rootsDir,
    ], { SVC_PROVIDER_TOKEN: "" });
    expect([result.code, result.stderr]).toEqual([1, ""]);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines.at(-1)).toBe("not ready to serve: 3 needed check(s) failed");
    for (const line of lines.slice(0, -1)) expect(line).toMatch(/^(✓ |✗ .+; fix: .+)/);
    expect(lines).toContain(`✗ qwen3-4b: ${file} has sha256 ${sha256Of(bytes)} but the catalog pins ${tiny.files["qwen3-4b"]!.sha256}; refusing to load it (not needed to serve); fix: replace ${file} with the file this catalog pins for qwen3-4b`);
    // the test catalog's qwen3-4b is not the bundled one: `svc-agent pull qwen3-4b` would fetch another file, elsewhere
    expect(lines).toContain(`✗ no model to serve; fix: replace ${file} with the file this catalog pins for qwen3-4b`);
    expect(lines.find((l) => l.startsWith(`✗ coordinator ${closed} is unreachable: `))).toMatch(/ECONNREFUSED.*; fix: check the URL/);
    expect(lines.find((l) => l.startsWith("✗ attestor chain does not verify"))).toContain("does not bind this agent's keys");
    expect(lines.find((l) => l.startsWith("✓ rung this machine would be granted: process"))).toContain("not a trusted release key");
    expect(lines).toContain(`✗ ${join(dataDir, "agent-keys.json")} has mode 0644, readable by other users (not needed to serve); fix: chmod 600 ${join(dataDir, "agent-keys.json")}`);
    // doctor looks; it does not fix
    expect(statSync(join(dataDir, "agent-keys.json")).mode & 0o777).toBe(0o644);
  });

  it("a coordinator whose catalog pins another file for a model this machine serves fails the catalog check", async () => {
    const result = await runCli("svc-agent", [...base(other, join(other.dir, "data")), "--coordinator", cluster.coordinator.url, "--json"]);
    const { ready, checks } = JSON.parse(result.stdout) as { ready: boolean; checks: JsonCheck[] };
    expect([result.code, ready]).toEqual([1, false]);
    const catalog = checks.find((c) => c.id === `catalog:${cluster.coordinator.url}`)!;
    expect(catalog).toMatchObject({ ok: false, needed: true });
    expect(catalog.line).toBe(
      `coordinator ${cluster.coordinator.url}'s catalog differs: qwen3-4b is pinned to sha256 ${cluster.tiny.files["qwen3-4b"]!.sha256.slice(0, 12)}… there, ${other.files["qwen3-4b"]!.sha256.slice(0, 12)}… here`,
    );
  });
});

function sha256Of(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}
