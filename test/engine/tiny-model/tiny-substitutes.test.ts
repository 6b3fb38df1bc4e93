// The substitutes an audit must catch (issue 43 item 3), generated like the tiny models: each a GGUF llama.cpp loads,
// differing from the original exactly as stated: other weights of the same shape, the same weights through a Q4_0
// round trip, or one layer removed.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { getLlama, readGgufFileInfo, type Llama, type Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeTinyModel, type TinyModelOptions } from "../../../tiny-model/gguf.ts";
import { Q4_0_BLOCK, q4_0RoundTrip } from "../../../tiny-model/q4-0.ts";
import { tempDir } from "../../fixtures/tiny-catalog.ts";

const dir = tempDir();
const ORIGINAL: TinyModelOptions = { seed: 5, layers: 4 };
const write = (name: string, options: TinyModelOptions) => writeTinyModel(join(dir, `${name}.gguf`), { ...ORIGINAL, ...options });
const original = write("original", {});
const substitutes = {
  seed: write("seed", { seed: 6 }),
  q4_0: write("q4_0", { roundTrip: "q4_0" }),
  drop: write("drop", { dropLayer: 2 }),
};

/** Every tensor's dims and F32 values, read from the file (the data section is the file's tail). */
async function tensors(path: string): Promise<{ blocks: number; byName: Map<string, { dims: number[]; data: Float32Array }> }> {
  const info = await readGgufFileInfo(path);
  const bytes = readFileSync(path);
  const all = info.fullTensorInfo ?? [];
  const size = (dims: readonly (number | bigint)[]) => dims.reduce<number>((n, d) => n * Number(d), 1) * 4;
  const last = all.at(-1)!;
  const start = bytes.length - (Number(last.offset) + Math.ceil(size(last.dimensions) / 32) * 32);
  const byName = new Map(
    all.map((t) => {
      const at = start + Number(t.offset);
      const copy = bytes.subarray(at, at + size(t.dimensions));
      return [t.name, { dims: t.dimensions.map(Number), data: new Float32Array(copy.buffer.slice(copy.byteOffset, copy.byteOffset + copy.length)) }];
    }),
  );
  return { blocks: (info.metadata as any).qwen3.block_count, byName }; // any: architecture keys are not typed
}

const rms = (a: Float32Array, b?: Float32Array) => Math.sqrt(a.reduce((s, x, i) => s + (x - (b?.[i] ?? 0)) ** 2, 0) / a.length);

describe("issue 43 item 3: substitutes of the tiny model", () => {
  let llama: Llama;
  beforeAll(async () => {
    llama = await getLlama({ gpu: false });
  });
  afterAll(async () => {
    await llama.dispose();
  });

  it("another seed: the same tensors and shapes, every weight matrix different", async () => {
    const [a, b] = [await tensors(original.path), await tensors(substitutes.seed.path)];
    expect([...b.byName.keys()]).toEqual([...a.byName.keys()]);
    for (const [name, t] of a.byName) {
      expect(b.byName.get(name)!.dims).toEqual(t.dims);
      if (t.dims.length === 2) expect(rms(t.data, b.byName.get(name)!.data)).toBeGreaterThan(0.5 * rms(t.data));
    }
  });

  it("Q4_0 round trip: each weight matrix is the original's quantised and dequantised, ≤ 16 levels a block, ~6 % RMS error; norms untouched", async () => {
    const [a, q] = [await tensors(original.path), await tensors(substitutes.q4_0.path)];
    expect(q.blocks).toBe(4);
    for (const [name, t] of a.byName) {
      const got = q.byName.get(name)!.data;
      if (t.dims.length === 1) {
        expect(got).toEqual(t.data);
        continue;
      }
      expect(got).toEqual(q4_0RoundTrip(t.data));
      for (let s = 0; s < got.length; s += Q4_0_BLOCK) expect(new Set(got.subarray(s, s + Q4_0_BLOCK)).size).toBeLessThanOrEqual(16);
      // uniform weights: the step is amax/8, so the error's RMS is amax/(8√12) against the weights' amax/√3, 0.0625
      if (rms(t.data) > 0) expect(rms(t.data, got) / rms(t.data)).toBeGreaterThan(0.04);
      if (rms(t.data) > 0) expect(rms(t.data, got) / rms(t.data)).toBeLessThan(0.09);
    }
  });

  it("one layer removed: 3 blocks of 4, block 2 gone and block 3 renumbered 2, everything else the original's", async () => {
    const [a, d] = [await tensors(original.path), await tensors(substitutes.drop.path)];
    expect([a.blocks, d.blocks]).toEqual([4, 3]);
    expect(d.byName.size).toBe(a.byName.size - 11);
    for (const [name, t] of d.byName) {
      const from = name.replace(/^blk\.2\./, "blk.3.");
      expect(t.data).toEqual(a.byName.get(from)!.data);
    }
    expect(d.byName.has("blk.3.attn_q.weight")).toBe(false);
  });

  it("each loads in llama.cpp, and its next-token distribution after a prompt differs from the original's", async () => {
    const distribution = async (path: string) => {
      const model = await llama.loadModel({ modelPath: path });
      const context = await model.createContext({ contextSize: 256, threads: 1 });
      try {
        const prompt = model.tokenize("The keeper climbed the stairs and", true) as Token[];
        const input = [...prompt.slice(0, -1), [prompt.at(-1)!, { generateNext: { probabilities: true } }] as const];
        const out = await context.getSequence().controlledEvaluate(input as Parameters<ReturnType<typeof context.getSequence>["controlledEvaluate"]>[0]);
        return out.at(-1)!.next!.probabilities!;
      } finally {
        await context.dispose();
        await model.dispose();
      }
    };
    // total variation distance between two next-token distributions
    const tv = (p: Map<Token, number>, q: Map<Token, number>) => 0.5 * [...new Set([...p.keys(), ...q.keys()])].reduce((s, t) => s + Math.abs((p.get(t) ?? 0) - (q.get(t) ?? 0)), 0);
    const reference = await distribution(original.path);
    expect(tv(reference, await distribution(original.path))).toBe(0);
    for (const file of Object.values(substitutes)) expect(tv(reference, await distribution(file.path))).toBeGreaterThan(1e-3);
  });
});
