// The `substitute=PATH` fault on real llama.cpp (issue 43's audit tests): the engine it builds runs the other GGUF, a
// Q4_0 round trip of the pinned one, while its done record (and so the receipt) names the pinned file's SHA-256.
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { faultInjection } from "../../../../agent/daemon/test-faults.ts";
import { Engine } from "../../../../agent/engine/engine.ts";
import type { EngineStore } from "../../../../agent/engine/inference.ts";
import { ModelStore } from "../../../../agent/models/store.ts";
import { writeTinyModel } from "../../../../tiny-model/gguf.ts";
import { askEngine, collect } from "../../../fixtures/engine-request.ts";
import { makeTinyCatalog } from "../../../fixtures/tiny-catalog.ts";

const tiny = makeTinyCatalog([{ alias: "qwen3-4b", seed: 3 }]);
const q4 = writeTinyModel(join(tiny.dir, "q4.gguf"), { seed: 3, roundTrip: "q4_0" });
const store = new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir });
const build = (files: EngineStore) => new Engine({ store: files, gpu: false, threads: 1 });
const honest = build(store);
const substitute = faultInjection(`substitute=${q4.path}`).engine!(build, store);
// the substitute's file served honestly: what the faulty engine must match
const itself = build({ verify: async () => ({ path: q4.path, sha256: q4.sha256 }) });
afterAll(async () => {
  await Promise.all([honest.dispose(), substitute.dispose(), itself.dispose()]);
  tiny.cleanup();
});

describe("substitute=PATH", () => {
  it("runs the other file: its logprobs are that file's, not the pin's, and the done record names the pin", async () => {
    const turn = () => askEngine({ temperature: 0, max_tokens: 8, top_logprobs: 0 });
    const [pinned, swapped, own] = [await collect(honest.generate(turn())), await collect(substitute.generate(turn())), await collect(itself.generate(turn()))];
    const logprobs = (r: typeof pinned) => r.answer.logprobs.map((e) => [e.id, e.logprob]);
    expect(swapped.answer.logprobs).toHaveLength(8);
    expect(logprobs(swapped)).toEqual(logprobs(own));
    expect(logprobs(swapped)).not.toEqual(logprobs(pinned));
    expect([swapped.done.model_sha256, own.done.model_sha256]).toEqual([tiny.files["qwen3-4b"]!.sha256, q4.sha256]);
  });
});
