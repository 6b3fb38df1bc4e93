// Issue 43 item 2 on real llama.cpp with the tiny qwen3 model: the auditor re-scores a provider's answer on its own
// copy of the pinned GGUF in one teacher-forced pass (agent/engine/rescore.ts) and compares the signed logprobs with
// the reference's (src/audit/). An honest provider on other threads and batch size passes; one serving another seed's
// weights under the same name fails.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getLlama, type Llama, type LlamaModel } from "node-llama-cpp";
import { Engine } from "../../../../agent/engine/engine.ts";
import { rescore } from "../../../../agent/engine/rescore.ts";
import { planTurn, type GenerateRequest } from "../../../../agent/engine/turn.ts";
import { ModelStore } from "../../../../agent/models/store.ts";
import { auditStatistic } from "../../../../src/audit/statistic.ts";
import { AUDIT_FAIL_MEAN, auditVerdict } from "../../../../src/audit/thresholds.ts";
import { collect, engineRequest } from "../../../fixtures/engine-request.ts";
import { makeTinyCatalog } from "../../../fixtures/tiny-catalog.ts";

const pinned = makeTinyCatalog([{ alias: "qwen3-4b", seed: 3 }]);
const otherSeed = makeTinyCatalog([{ alias: "qwen3-4b", seed: 4 }]);
const provider = (catalog: typeof pinned, threads: number, batchSize: number) =>
  new Engine({ store: new ModelStore({ catalog: catalog.catalog, modelsDir: catalog.modelsDir }), gpu: false, threads, batchSize, contextSize: 4096 });
const honest = provider(pinned, 1, 512);
const substitute = provider(otherSeed, 1, 512);
let llama: Llama;
let reference: LlamaModel;
beforeAll(async () => {
  llama = await getLlama({ gpu: false });
  reference = await llama.loadModel({ modelPath: (await new ModelStore({ catalog: pinned.catalog, modelsDir: pinned.modelsDir }).verify("qwen3-4b")).path });
});
afterAll(async () => {
  await honest.dispose();
  await substitute.dispose();
  await reference?.dispose();
  pinned.cleanup();
  otherSeed.cleanup();
});

const REQUEST: GenerateRequest = engineRequest({ messages: [{ role: "user", content: "Tell me about the lighthouse keeper." }], max_tokens: 40, temperature: 0.9, seed: 21, top_logprobs: 3 });

async function audit(engine: Engine) {
  const { answer, done } = await collect(engine.generate(planTurn(REQUEST)));
  const entries = answer.logprobs;
  // the auditor runs other settings than the provider: 2 threads, batches of 16
  const { promptTokens, positions } = await rescore(reference, REQUEST, entries.map((e) => e.id), { threads: 2, batchSize: 16 });
  return { done, promptTokens, entries, statistic: auditStatistic(entries, positions) };
}

describe("issue 43 item 2: re-scoring an answer on the auditor's copy of the pinned GGUF", () => {
  it("an honest provider: the prompt renders to the receipt's count, every token re-scores within the tolerance", async () => {
    const { done, promptTokens, entries, statistic } = await audit(honest);
    expect(promptTokens).toBe(done.prompt_tokens);
    expect(statistic.n).toBe(done.completion_tokens);
    expect(entries.length).toBeGreaterThan(10);
    expect(statistic.mean).toBeLessThan(AUDIT_FAIL_MEAN);
    expect(statistic.meanListed).toBeLessThan(AUDIT_FAIL_MEAN);
    expect(auditVerdict(statistic)).toBe("pass");
  });

  it("a provider serving another seed's weights under the pinned name fails on one audit", async () => {
    const { statistic } = await audit(substitute);
    expect(statistic.mean).toBeGreaterThan(100 * AUDIT_FAIL_MEAN);
    expect(auditVerdict(statistic)).toBe("fail");
  });

  it("the right model with made-up logprobs (each shifted by 0.05 nats) fails", async () => {
    const { entries } = await audit(honest);
    const madeUp = entries.map((e, i) => ({ ...e, logprob: Math.min(0, e.logprob + (i % 2 === 0 ? 0.05 : -0.05)) }));
    const { positions } = await rescore(reference, REQUEST, entries.map((e) => e.id), { threads: 2, batchSize: 16 });
    expect(auditVerdict(auditStatistic(madeUp, positions))).toBe("fail");
  });
});
