// One answer position as an auditor's reference pass sees it (issue 43 item 2): the provider's token's log
// probability under the reference distribution, and the most likely tokens there. Reduced at once from the full
// distribution, which at a real vocabulary is too large to keep per position. Portable: plain numbers in and out.
import * as z from "zod";
import { MAX_TOP_LOGPROBS, UNLIKELY_LOGPROB } from "../receipt/logprobs.ts";

export interface ReferencePosition {
  /** The provider's token at this position. */
  id: number;
  /** Its log probability under the reference (UNLIKELY_LOGPROB where the reference gives it none). */
  ref: number;
  /** The `k` most likely tokens, most likely first: [id, log probability]. */
  top: [number, number][];
}

/** A reference position as the rescorer sends it and an audit's evidence keeps it: read from a stranger, so parsed. */
export const ReferencePositionSchema = z.strictObject({
  id: z.number().int().min(0),
  ref: z.number(),
  top: z.array(z.tuple([z.number().int().min(0), z.number()])).max(MAX_TOP_LOGPROBS),
});

/** Reduces a full distribution (token id → probability, as node-llama-cpp returns it) at the provider's token. */
export function referencePosition(distribution: Iterable<[number, number]>, id: number, k: number): ReferencePosition {
  let ref = UNLIKELY_LOGPROB;
  const top: [number, number][] = [];
  for (const [token, p] of distribution) {
    if (token === id && p > 0) ref = Math.log(p);
    if (k > 0 && (top.length < k || p > top[top.length - 1]![1])) {
      top.push([token, p]);
      top.sort((a, b) => b[1] - a[1]);
      if (top.length > k) top.pop();
    }
  }
  return { id, ref, top: top.map(([token, p]) => [token, p > 0 ? Math.log(p) : UNLIKELY_LOGPROB]) };
}
