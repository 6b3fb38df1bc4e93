// OpenAI's legacy `text_completion` objects (POST /v1/completions): one body, or a stream of them whose last
// carries finish_reason, usage, the receipt and the verdict fields, as chat's stop chunk does.
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

const choice = (text: string, finishReason: string | null) => ({ text, index: 0, logprobs: null, finish_reason: finishReason });
export const object = (meta: LegacyMeta, text: string, finishReason: string | null) => ({ ...meta, object: "text_completion", choices: [choice(text, finishReason)] });

/** The whole answer as one body. */
export const legacyBody = (meta: LegacyMeta, text: string, receipt: Receipt) => ({ ...object(meta, text, receipt.finish_reason), usage: reportedUsage(receipt), svc_receipt: receipt });

/** The last event of a stream, as chat's stop chunk: finish_reason, usage, the receipt and the verdict fields. */
export function stopEvent(meta: LegacyMeta, receipt: Receipt) {
  const verdict = verdictOf(receipt);
  return { ...object(meta, "", receipt.finish_reason), usage: reportedUsage(receipt), svc_receipt: receipt, x_svc_trust: verdict.trust, x_svc_model: verdict.model, x_svc_provider: verdict.provider };
}
