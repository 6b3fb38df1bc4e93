// The prompt-cache fields of a request (DESIGN §9), which every chat-like route parses alike: OpenAI's
// `prompt_cache_key` (a caller's own partition) and llama-server's `cache_prompt` switch. The scope they refine is
// the gateway's HMAC (gateway/keys/cache-scope.ts), handed to the parser as a plain value.
import * as z from "zod";

/** OpenAI's `prompt_cache_key`: bounded, since it is hashed on every request. */
export const MAX_PROMPT_CACHE_KEY_LENGTH = 1024;

/** The request fields (chat, Responses, legacy completions). */
export const CacheFields = {
  prompt_cache_key: z.string().max(MAX_PROMPT_CACHE_KEY_LENGTH).nullish(),
  cache_prompt: z.boolean().nullish(),
};

/** The gateway's names for a caller's prompt cache (gateway/keys/cache-scope.ts), handed to the parser as plain values. */
export interface CacheInputs {
  /** The scope for the body's `prompt_cache_key`; absent, no scope is sealed. */
  cacheScope?: string | undefined;
  /** The key the scope belongs to, as a provider shares its cache out (one share per key). */
  cacheOwner?: string | undefined;
}

/** The scope a request seals with its owner (none under `cache_prompt: false`, which is sealed instead), and the
 * fields that say so. */
export function cacheOf(cachePrompt: boolean | null | undefined, { cacheScope: scope, cacheOwner }: CacheInputs) {
  const cacheScope = cachePrompt === false ? undefined : scope;
  return {
    cacheScope,
    sealed: {
      ...(cacheScope === undefined ? {} : { cache_scope: cacheScope, ...(cacheOwner === undefined ? {} : { cache_owner: cacheOwner }) }),
      ...(cachePrompt === false ? { cache_prompt: false as const } : {}),
    },
  };
}
