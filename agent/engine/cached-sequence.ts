// A session's sequence from the prompt cache (DESIGN §9): the scope's own sequence with the prompt's common prefix
// kept and everything after the first differing token erased, or an empty one; and at the end, either the
// whole conversation kept for the scope or nothing of this session left behind.
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import type { CacheEntry, PromptCache } from "./prompt-cache.ts";

export interface SessionSequence {
  sequence: LlamaContextSequence;
  /** Prompt tokens already in the sequence from the scope's earlier session; evaluation starts after them. */
  cached: number;
  /** Ends the session: kept for the scope when it ended well; otherwise nothing this session evaluated remains. */
  end(ok: boolean): Promise<void>;
}

/** Clears the conversations past the TTL. Caller holds the engine's turn. */
export async function clearExpired(cache: PromptCache<LlamaContextSequence>, now: number): Promise<void> {
  for (const entry of cache.expired(now)) await clear(cache, entry);
}

/**
 * Takes a sequence for a session of `scope` (undefined: keep nothing) over `prompt`. Caller holds the engine's
 * turn. At least the prompt's last token is always evaluated, so the first answer token has fresh logits.
 */
export async function openSequence(cache: PromptCache<LlamaContextSequence>, scope: string | undefined, prompt: Token[], now = Date.now(), owner?: string): Promise<SessionSequence> {
  await clearExpired(cache, now);
  const { entry, hit, evict } = cache.take(scope, now, owner);
  const { sequence } = entry;
  if (evict) await clear(cache, entry);
  let cached = 0;
  if (hit) {
    cached = Math.min(sequence.compareContextTokens(prompt).firstDifferentIndex, prompt.length - 1);
    await eraseFrom(sequence, cached);
  } else if (sequence.nextTokenIndex > 0) {
    await sequence.clearHistory(); // an empty entry holds nothing; this only guards the invariant
  }
  const kept = entry.usedAt;
  return {
    sequence,
    cached,
    async end(ok) {
      try {
        if (scope === undefined) return await clear(cache, entry);
        if (ok) return cache.keep(entry, scope, Date.now(), owner);
        // an aborted or failed session: back to the prefix the scope's last good session left, or nothing
        if (cached === 0) return await clear(cache, entry);
        await eraseFrom(sequence, cached);
        cache.keep(entry, scope, kept, owner);
      } catch (err) {
        await clear(cache, entry);
        throw err;
      }
    },
  };
}

async function eraseFrom(sequence: LlamaContextSequence, index: number): Promise<void> {
  if (sequence.nextTokenIndex > index) await sequence.eraseContextTokenRanges([{ start: index, end: sequence.nextTokenIndex }]);
}

async function clear(cache: PromptCache<LlamaContextSequence>, entry: CacheEntry<LlamaContextSequence>): Promise<void> {
  cache.forget(entry);
  await entry.sequence.clearHistory();
}
