// OpenAI's legacy `text_completion` objects (POST /v1/completions): one body, or a stream of them whose last
// carries finish_reason, usage, the receipt and the verdict fields, as chat's stop chunk does.
import { legacyLogprobs, legacyOffsetAfter, type TokenLogprob } from "../receipt/logprobs.ts";
import { reportedUsage, type Receipt } from "../receipt/receipt.ts";
import { randomBase64url } from "./ids.ts";
import { verdictOf } from "./shapes.ts";

export interface LegacyMeta {
  id: string;
  created: number;
  model: string;
}

export function newLegacyMeta(model: string, now = Date.now()): LegacyMeta {
  return { id: `cmpl-${randomBase64url(16)}`, created: Math.floor(now / 1000), model };
}

/** `logprobs`: OpenAI's legacy object for the tokens (src/receipt/logprobs.ts), or null when none were asked for. */
type Logprobs = ReturnType<typeof legacyLogprobs> | null;
const choice = (text: string, finishReason: string | null, logprobs: Logprobs) => ({ text, index: 0, logprobs, finish_reason: finishReason });
export const object = (meta: LegacyMeta, text: string, finishReason: string | null, logprobs: Logprobs = null) => ({ ...meta, object: "text_completion", choices: [choice(text, finishReason, logprobs)] });

/** The whole answer as one body; `logprobs` every token's entry when they were asked for. */
export const legacyBody = (meta: LegacyMeta, text: string, receipt: Receipt, logprobs?: readonly TokenLogprob[]) => ({
  ...object(meta, text, receipt.finish_reason, logprobs === undefined ? null : legacyLogprobs(logprobs)),
  usage: reportedUsage(receipt),
  svc_receipt: receipt,
});

/**
 * A stream's events for its text, in order: a `logprobs` piece rides with the next text, its `text_offset` counted
 * from the stream's start; logprobs after the last text get an event of their own, with empty text, before the last.
 */
export function legacyEvents(meta: LegacyMeta) {
  let pending: TokenLogprob[] = [];
  let offset = 0;
  const logprobsOf = (): Logprobs => {
    if (pending.length === 0) return null;
    const out = legacyLogprobs(pending, offset);
    offset = legacyOffsetAfter(pending, offset);
    pending = [];
    return out;
  };
  return {
    text(text: string) {
      return object(meta, text, null, logprobsOf());
    },
    logprobs(entries: readonly TokenLogprob[]) {
      pending.push(...entries);
    },
    rest() {
      return pending.length === 0 ? [] : [object(meta, "", null, logprobsOf())];
    },
  };
}

/** The last event of a stream, as chat's stop chunk: finish_reason, usage, the receipt and the verdict fields. */
export function stopEvent(meta: LegacyMeta, receipt: Receipt) {
  const verdict = verdictOf(receipt);
  return { ...object(meta, "", receipt.finish_reason), usage: reportedUsage(receipt), svc_receipt: receipt, x_svc_trust: verdict.trust, x_svc_model: verdict.model, x_svc_provider: verdict.provider };
}
