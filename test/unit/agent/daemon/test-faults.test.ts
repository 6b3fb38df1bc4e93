// The dishonest providers of issue 43's audit tests (agent/daemon/test-faults.ts): `substitute=PATH` runs another GGUF
// under the pinned name and SHA-256, and `cheat=FRACTION` does so on that share of sessions only, drawn per session.
// On fake engines: which store each engine is built on, and which engine each session runs on.
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { faultInjection } from "../../../../agent/daemon/test-faults.ts";
import type { EngineStore, InferenceEngine } from "../../../../agent/engine/inference.ts";
import type { Turn } from "../../../../agent/engine/turn.ts";
import { tempDir } from "../../../fixtures/tiny-catalog.ts";

const dir = tempDir();
const SUBSTITUTE = join(dir, "other.gguf");
writeFileSync(SUBSTITUTE, "GGUF");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PINNED = { path: "/models/pinned.gguf", sha256: "ab".repeat(32) };
const store: EngineStore = { verify: async () => PINNED };

/** Builds fake engines that say which file they run; `dice` are the per-session draws. */
function built(spec: string, dice: number[] = []) {
  const engines: { path: string; sha256: string; disposed: boolean }[] = [];
  const build = (files: EngineStore): InferenceEngine => {
    const record = { path: "", sha256: "", disposed: false };
    engines.push(record);
    return {
      async *generate() {
        Object.assign(record, await files.verify("qwen3-4b"));
        yield { type: "delta", text: record.path };
      },
      dispose: async () => void (record.disposed = true),
    };
  };
  const faults = faultInjection(spec, () => dice.shift()!);
  return { engine: faults.engine?.(build, store), engines, faults };
}

const run = async (engine: InferenceEngine) => {
  for await (const event of engine.generate({} as Turn)) if (event.type === "delta") return event.text;
  return undefined;
};

describe("substitute=PATH", () => {
  it("runs PATH in place of the pinned file, handed out under the pin's SHA-256 (so the receipt names the pin)", async () => {
    const { engine, engines } = built(`substitute=${SUBSTITUTE}`);
    expect(await run(engine!)).toBe(SUBSTITUTE);
    expect(engines).toEqual([{ path: SUBSTITUTE, sha256: PINNED.sha256, disposed: false }]);
  });

  it("an honest agent's faults build no engine of their own", () => {
    expect(built("logprob-shift=100").faults.engine).toBeUndefined();
  });

  it.each([
    ["substitute=", "substitute=: expected substitute=PATH of a GGUF file"],
    [`substitute=${join(dir, "missing.gguf")}`, "expected substitute=PATH of a GGUF file"],
    [`substitute=${SUBSTITUTE},cheat=0`, "expected cheat=FRACTION in (0, 1]"],
    [`substitute=${SUBSTITUTE},cheat=1.5`, "expected cheat=FRACTION in (0, 1]"],
    [`substitute=${SUBSTITUTE},cheat=half`, "expected cheat=FRACTION in (0, 1]"],
    ["cheat=0.5", "cheat needs substitute=PATH"],
  ])("%s is refused", (spec, message) => {
    expect(() => faultInjection(spec)).toThrow(message);
  });
});

describe("cheat=FRACTION with substitute=PATH", () => {
  it("each session draws: below FRACTION the substitute runs, else the pinned file", async () => {
    const { engine, engines } = built(`substitute=${SUBSTITUTE},cheat=0.25`, [0.1, 0.6, 0.249, 0.25, 0.9]);
    const ran = [];
    for (let i = 0; i < 5; i++) ran.push(await run(engine!));
    expect(ran).toEqual([SUBSTITUTE, PINNED.path, SUBSTITUTE, PINNED.path, PINNED.path]);
    await engine!.dispose();
    expect(engines.map((e) => e.disposed)).toEqual([true, true]);
  });
});
