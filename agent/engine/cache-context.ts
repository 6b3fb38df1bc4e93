// The context a loaded model runs on, sized for the prompt cache (DESIGN §9): llama.cpp gives each sequence its
// own KV cells up front, so `--prompt-cache-gb` buys whole sequences, each holding one caller's conversation.
import type { LlamaContext, LlamaContextSequence, LlamaModel } from "node-llama-cpp";
import { cacheSequences } from "./cache-budget.ts";
import { PromptCache } from "./prompt-cache.ts";

export interface CachedContext {
  context: LlamaContext;
  cache: PromptCache<LlamaContextSequence>;
  /** Whether conversations are kept at all (`--prompt-cache-gb 0`: never). */
  keeps: boolean;
}

export interface CacheSettings {
  contextSize: number;
  threads: number;
  /** llama.cpp's batch size; node-llama-cpp's default unless set. */
  batchSize?: number;
  /** `--prompt-cache-gb` (undefined: the default share), the machine's memory in GiB, and the TTL. */
  gb?: number;
  memoryGb: number;
  ttlMs: number;
}

export async function createCachedContext(model: LlamaModel, settings: CacheSettings): Promise<CachedContext> {
  const { contextSize, threads, batchSize } = settings;
  const { sequences, keeps } = cacheSequences({
    gb: settings.gb,
    memoryGb: settings.memoryGb,
    modelBytes: model.size,
    perSequenceBytes: await perSequenceBytes(model, contextSize),
  });
  // one session decodes at a time (the engine's lock): a decode is dispatched at once, as node-llama-cpp does with
  // one sequence, not on the next event-loop turn in case other sequences join the batch (they never do)
  const context = await model.createContext({ contextSize, threads, sequences, ...(batchSize === undefined ? {} : { batchSize }), batching: { dispatchSchedule: (dispatch) => dispatch() } });
  const all = Array.from({ length: sequences }, () => context.getSequence());
  return { context, cache: new PromptCache(all, settings.ttlMs), keeps };
}

/** One sequence's share of the context's memory: what a second sequence adds to llama.cpp's own estimate. */
async function perSequenceBytes(model: LlamaModel, contextSize: number): Promise<number> {
  const estimate = async (sequences: number) => {
    const { cpuRam, gpuVram } = await model.fileInsights.estimateContextResourceRequirementsV2({ contextSize, modelGpuLayers: model.gpuLayers, sequences });
    return cpuRam + gpuVram;
  };
  return Math.max(1, (await estimate(2)) - (await estimate(1)));
}
