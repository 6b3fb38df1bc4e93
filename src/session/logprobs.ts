// Log probabilities as the sealed request asks for them (issue 43): how many alternatives per position, present only
// when the caller asked for logprobs at all, and the bound that keeps an answer's entries within what one session may
// relay. The gateway's parsers and the agent's check of the plaintext read the same rule.
import * as z from "zod";
import { ApiError } from "../errors.ts";
import { MAX_TOP_LOGPROBS } from "../receipt/logprobs.ts";

export const LogprobsFieldSchema = z.strictObject({
  /** Present only when the caller asked for log probabilities: each generated token's, with this many alternatives. */
  top_logprobs: z.int().min(0).max(MAX_TOP_LOGPROBS).optional(),
});

/**
 * Entries (a token, or one of its alternatives) one answer may carry, and their tokens' bytes on average: at most
 * about 600 sealed bytes an entry, so an answer's logprobs stay within 40 MiB of the 64 MiB the coordinator relays
 * for one session (an honest answer's take about 120 bytes an entry).
 */
export const MAX_LOGPROB_ENTRIES = 65_536;
export const LOGPROB_BYTES_PER_ENTRY = 32;

/** The most tokens whose logprobs an answer may carry with `top` alternatives each. */
export const logprobTokenCap = (top: number): number => Math.floor(MAX_LOGPROB_ENTRIES / (1 + top));

/**
 * A `max_tokens` too long for its logprobs: the 400 both ends give (the gateway's parser, the agent reading the
 * plaintext). Without `max_tokens` the answer is at most DEFAULT_MAX_TOKENS, always within the cap.
 */
export function logprobsFault(request: { top_logprobs?: number | undefined; max_tokens?: number | undefined }, param = "max_tokens"): ApiError | undefined {
  const top = request.top_logprobs;
  if (top === undefined || request.max_tokens === undefined) return undefined;
  const cap = logprobTokenCap(top);
  if (request.max_tokens <= cap) return undefined;
  return new ApiError(
    "invalid_value",
    `${param}: with ${top} top_logprobs an answer carries the logprobs of at most ${cap} tokens (${MAX_LOGPROB_ENTRIES} entries, a token or an alternative each); lower ${param} or top_logprobs.`,
    { param },
  );
}
