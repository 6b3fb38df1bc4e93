// One candidate's try at a gateway-blind session (DESIGN §10): choose among the envelope's candidates, place the
// envelope there as it came, relay its sealed frames unopened within a wire budget the clear fields earn, and check
// the receipt beside the final frame against the provider's attested key and the envelope (the gateway holds
// neither the request nor the answer). The caller's client opens and checks the rest.
import { PAD_BYTES, type SealedEnvelope } from "../../src/blind/format.ts";
import type { CatalogEntry } from "../../src/catalog.ts";
import { verifySignatureNative } from "../../src/crypto/signing.ts";
import { ApiError, ERROR_CODES, type ErrorCode } from "../../src/errors.ts";
import { answerLimits } from "../../src/session/answer-bounds.ts";
import { checkReceipt, providerFault, receiptInvalid } from "../../src/session/answer-reader.ts";
import type { DirectoryEntry } from "../../src/wire/gateway.ts";
import { record } from "./directory-copy.ts";
import type { BlindEvent, BlindRequest } from "./directory.ts";
import { LiveSession } from "./live-session.ts";
import type { Breach } from "./provider-faults.ts";
import { logCut, nextMessage, release, type AttemptHost, type Outcome } from "./session-attempt.ts";
import { randomBase64url } from "../../src/crypto/random-id.ts";

/** The ChaCha20-Poly1305 tag after each padded frame. */
const TAG_BYTES = 16;
/** A padded frame's most bytes on the wire per PAD_BYTES: sealed, then base64url. */
const WIRE_PER_PAD = Math.ceil(((PAD_BYTES + TAG_BYTES) * 4) / 3);

export interface BlindHost extends AttemptHost {
  /** Chooses among the envelope's candidates from the copy and places the envelope there as it came. */
  placeBlind(id: string, request: BlindRequest, exclude: readonly string[], maxBytes: number, signal: AbortSignal): Promise<DirectoryEntry>;
}

/**
 * The sealed bytes a blind answer may take on the wire: the normal bound for its clear budget, and a padded frame's
 * worth for every piece it may send (each frame, one piece at worst, pads to at least PAD_BYTES).
 */
export function blindWireBytes({ kind, max_tokens }: Pick<SealedEnvelope, "kind" | "max_tokens">, entry: Pick<CatalogEntry, "embedding_dimensions">): number {
  const limits =
    kind === "embeddings"
      ? answerLimits({ input: Array<string>(max_tokens).fill(""), dimensions: entry.embedding_dimensions ?? 0 })
      : answerLimits({ max_tokens });
  return limits.wireBytes + limits.pieces * WIRE_PER_PAD;
}

/** Whether `data` is base64url of one sealed frame: a whole number of padded blocks and the tag, nothing else. */
export function isSealedFrame(data: string): boolean {
  if (!/^[A-Za-z0-9_-]+$/.test(data) || data.length % 4 === 1) return false;
  const bytes = Math.floor((data.length * 3) / 4);
  return bytes >= PAD_BYTES + TAG_BYTES && (bytes - TAG_BYTES) % PAD_BYTES === 0;
}

/** Whether `code` is svc's word for a request refused as invalid (the caller's to fix), as an agent reads a sealed request. */
const isRefusal = (code: string): boolean => Object.hasOwn(ERROR_CODES, code) && ERROR_CODES[code as ErrorCode].type === "invalid_request_error";

/** One candidate's try: place, relay its frames unopened, check the clear receipt beside the last. */
export async function* blindAttempt(host: BlindHost, request: BlindRequest, exclude: readonly string[], mayReroute: boolean, signal: AbortSignal): AsyncGenerator<BlindEvent, Outcome, void> {
  const id = `s_${randomBase64url(12)}`;
  const { envelope, entry } = request;
  const wireBytes = blindWireBytes(envelope, entry);
  let chosen: string | undefined;
  const live = new LiveSession(wireBytes, host.deadlines, () => host.cancel(id), host.held, !envelope.stream, (cut, gone) => logCut(host, request, chosen, cut, gone));
  host.sessions.set(id, live);
  let finished = false;
  let relayed = 0;
  try {
    const provider = await host.placeBlind(id, request, exclude, wireBytes, signal);
    chosen = provider.id;
    yield { type: "provider", provider: record(provider) };
    /** The provider's fault: charged, then re-routed while the caller has had none of its frames, else the caller's 502. */
    const fault = ({ kind, why }: Breach): Outcome => {
      host.charge(provider, { kind, why }, request.requestId);
      const error = providerFault(provider.id, why);
      if (mayReroute && relayed === 0 && envelope.candidates.length > 1) return { done: false, leftBy: provider.id, fault: error };
      throw error;
    };
    for (;;) {
      // one candidate is as good as a pin: there is nowhere else it opens
      const next = await nextMessage(host, live, id, provider.id, envelope.candidates.length > 1, signal, () => (finished = true));
      if ("breach" in next) return fault(next.breach);
      if ("outcome" in next) return next.outcome;
      const { message } = next;
      if (message.t === "end") {
        // the caller's envelope opened for none of this provider's keys: the caller's to fix (or its candidate's key changed)
        if (message.code === "sealed_request_invalid") {
          throw new ApiError("sealed_request_invalid", `The sealed request did not open at provider ${provider.id}: seal it again to the provider's attested key, for this alias.`);
        }
        return fault({ kind: "broken", why: "ended the session without a result" });
      }
      if (!isSealedFrame(message.data)) return fault({ kind: "broken", why: "sent a frame that is not one sealed, padded frame" });
      if (message.final !== true) {
        relayed++;
        yield { type: "frame", data: message.data, final: false };
        continue;
      }
      finished = true;
      if (message.receipt !== undefined) {
        const verdict = checkReceipt(message.receipt, { provider, entry, requestSha256: envelope.request_sha256 }, undefined, { signature: verifySignatureNative });
        if (!verdict.valid || verdict.receipt === undefined) {
          host.log.warn({ provider: provider.id, request_id: request.requestId, problems: verdict.problems }, `receipt from provider ${provider.id} rejected`);
          host.charge(provider, { kind: "broken", why: "sent a receipt that does not verify" }, request.requestId);
          throw receiptInvalid(provider.id, verdict.problems);
        }
        const { completion_tokens } = verdict.receipt.usage;
        const budget = envelope.kind === "embeddings" ? 0 : envelope.max_tokens;
        if (completion_tokens > budget) return fault({ kind: "answer_bounds", why: `claimed ${completion_tokens} completion tokens, more than the ${budget} the sealed request allows` });
        host.served(request.requestId);
        yield { type: "frame", data: message.data, final: true };
        yield { type: "done", receipt: verdict.receipt };
        return { done: true };
      }
      if (message.code === undefined) return fault({ kind: "broken", why: "sent a final frame with neither receipt nor error code" });
      // the gateway sees the code only: a refusal of the request (a 400 of svc's) is the caller's, anything else the provider's own
      if (!isRefusal(message.code)) host.charge(provider, { kind: "error", why: `reported an error of its own (${message.code})` }, request.requestId);
      yield { type: "frame", data: message.data, final: true };
      yield { type: "failed", code: message.code };
      return { done: true };
    }
  } finally {
    release(host, live, id, finished);
  }
}
