// How many conversations the prompt cache holds (`--prompt-cache-gb`): each is one context sequence, whose KV
// cells llama.cpp allocates up front, so the budget buys whole sequences. Pure.

const GIB = 1024 ** 3;
/** The default budget's share of the memory left after the model file. */
export const DEFAULT_CACHE_SHARE = 0.25;
/** At most this many conversations, whatever the budget (each is a llama.cpp sequence with its own cells). */
export const MAX_CACHED_CONVERSATIONS = 8;

export interface CacheBudget {
  /** `--prompt-cache-gb`; undefined for the default share, 0 for no cache. */
  gb?: number;
  /** The machine's memory (GiB) and the model file's size (bytes). */
  memoryGb: number;
  modelBytes: number;
  /** One sequence's KV cells at the context size (bytes). */
  perSequenceBytes: number;
}

/** The budget in bytes: the flag's, or a quarter of what the model leaves of memory. */
export function cacheBytes({ gb, memoryGb, modelBytes }: Omit<CacheBudget, "perSequenceBytes">): number {
  if (gb !== undefined) return gb * GIB;
  return Math.max(0, memoryGb * GIB - modelBytes) * DEFAULT_CACHE_SHARE;
}

/**
 * The context's sequences: the one every session runs on, plus one per conversation the budget holds beyond it
 * (so a budget below one sequence keeps just the last conversation). 0: the cache is off.
 */
export function cacheSequences(budget: CacheBudget): { sequences: number; keeps: boolean } {
  const bytes = cacheBytes(budget);
  if (bytes <= 0) return { sequences: 1, keeps: false };
  const extra = Math.floor(bytes / Math.max(1, budget.perSequenceBytes));
  return { sequences: 1 + Math.min(extra, MAX_CACHED_CONVERSATIONS - 1), keeps: true };
}
