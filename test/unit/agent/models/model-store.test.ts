// What an agent offers (issue: foundation): aliases whose file is present and whose min_memory_gb fits; what it
// advertises (issue 29): of those, the ones whose file matches its pin.
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ModelFileError, ModelStore, parseModelOverrides } from "../../../../agent/models/store.ts";
import { makeTinyCatalog, tempDir } from "../../../fixtures/tiny-catalog.ts";

describe("ModelStore", () => {
  const tiny = makeTinyCatalog([
    { alias: "small", seed: 1, min_memory_gb: 4 },
    { alias: "large", seed: 2, min_memory_gb: 16 },
    { alias: "absent", seed: 3, min_memory_gb: 1 },
  ]);
  afterAll(() => tiny.cleanup());
  rmSync(tiny.files.absent!.path);

  it("offers only aliases whose file is present and whose memory fits", () => {
    const store = new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir });
    expect(store.offered(8)).toEqual(["small"]);
    expect(store.offered(16)).toEqual(["small", "large"]);
    expect(store.offered(2)).toEqual([]);
  });

  it("--model ALIAS=PATH supplies a file from anywhere", () => {
    const path = join(tempDir(), "x.gguf");
    writeFileSync(path, "");
    const overrides = parseModelOverrides(tiny.catalog, [`absent=${path}`]);
    const store = new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir, overrides });
    expect(store.pathFor("absent")).toBe(path);
    expect(store.offered(8)).toEqual(["small", "absent"]);
  });

  it.each([["absent"], ["=x"], ["absent="], ["qwen9=/x"]])("rejects the flag --model %s", (flag) => {
    expect(() => parseModelOverrides(tiny.catalog, [flag])).toThrow(ModelFileError);
  });

  it("a missing file is refused with the command that fetches it", async () => {
    const store = new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir });
    await expect(store.verify("absent")).rejects.toThrow("run: svc-agent pull absent");
  });
});

describe("ModelStore: only files that match their pins are advertised", () => {
  const tiny = makeTinyCatalog([
    { alias: "good", seed: 1 },
    { alias: "short", seed: 2 },
    { alias: "flipped", seed: 3 },
  ]);
  afterAll(() => tiny.cleanup());

  it("a file of the wrong size, or of the right size with other bytes, is refused by name; the good one is kept", async () => {
    const short = join(tempDir(), "short.gguf");
    writeFileSync(short, "GGUF\0\0\0\0");
    const flipped = join(tempDir(), "flipped.gguf");
    writeFileSync(flipped, Buffer.alloc(tiny.files.flipped!.sizeBytes));
    const overrides = parseModelOverrides(tiny.catalog, [`short=${short}`, `flipped=${flipped}`]);
    const store = new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir, overrides });
    const { aliases, refused } = await store.pinnedOffered(8);
    expect(aliases).toEqual(["good"]);
    expect(refused.map((e) => e.message)).toEqual([
      `short: ${short} is 8 bytes but the catalog pins ${tiny.files.short!.sizeBytes}; refusing to load it`,
      expect.stringMatching(new RegExp(`^flipped: ${flipped} has sha256 [0-9a-f]{64} but the catalog pins ${tiny.files.flipped!.sha256}; refusing to load it$`)),
    ]);
  });
});
