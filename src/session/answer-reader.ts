// The answer side of a sealed session (DESIGN §5, §8, §10), one piece for whoever opens the frames: the gateway in
// the normal mode, a caller's own client in gateway-blind mode. Each opened frame's text becomes a SessionFrame, its
// pieces are held to the answer's bounds and assembled into the AnswerRecord the receipt covers, and the receipt is
// checked against the provider's key and rung as the checker's own check of its evidence proved them, the catalog
// entry's pins and the SHA-256 of the exact plaintext sealed. Plain values in and out; no I/O, no node: module.
import type { CatalogEntry } from "../catalog.ts";
import { ApiError } from "../errors.ts";
import { AnswerRecord, type AnswerPiece } from "../receipt/answer-record.ts";
import { RECEIPT_VERSION_CACHE, RECEIPT_VERSION_LOGPROBS, verifyReceipt, type Receipt, type ReceiptVerdict } from "../receipt/receipt.ts";
import type { TrustLevel } from "../receipt/rungs.ts";
import type { verifySignature } from "../receipt/signature.ts";
import { AnswerBounds, type AnswerBreach, type AnswerLimits } from "./answer-bounds.ts";
import { readReport, type Report } from "./provider-report.ts";
import { SessionFrameSchema, type SessionFrame, type SessionPlaintext } from "./sealed-request.ts";

/** The provider that answers, as the checker's own check of its evidence proved it (never as a message says). */
export interface ProvenProvider {
  id: string;
  signing_key: string;
  trust: TrustLevel;
  serial?: string;
}

/** What a receipt must say: who signed it, for which model file and which sealed bytes. */
export interface ReceiptContext {
  provider: ProvenProvider;
  /** The request's pin, when it named one. */
  pin?: string;
  /** The catalog entry of the alias asked for: its pins (hub id, revision, SHA-256). */
  entry: CatalogEntry;
  /** SHA-256 (lowercase hex) of the exact plaintext bytes sealed. */
  requestSha256: string;
}

/** What an answer must be: its receipt's context, and the request it answers (its bounds, nonces, the fields an error may name). */
export interface AnswerExpectations extends ReceiptContext {
  body: SessionPlaintext;
}

/** Another implementation of the Ed25519 check (the gateway's, on node's native one), and where the receipt check's time goes. */
export interface AnswerEngines {
  signature?: typeof verifySignature;
  timed?: (ms: number) => void;
}

/** How a session ends, as the frame that ends it says. */
export type FrameEnd =
  /** The answer is whole and its receipt verifies. */
  | { type: "done"; receipt: Receipt; answer: AnswerRecord; firstTokenMs: number | undefined }
  /** The provider's error frame, read as provider-report.ts reads it. */
  | { type: "report"; report: Report }
  /** The provider broke its answer's bounds, or sent a frame that is no session frame. */
  | { type: "fault"; breach: AnswerBreach }
  /** The receipt does not verify: the answer is not vouched for. */
  | { type: "receipt_invalid"; problems: string[] };

/** One frame, read: the pieces it held (each within bounds, added to the record), then how it ends the session, if it does. */
export interface FrameRead {
  pieces: AnswerPiece[];
  end?: FrameEnd;
}

/** The session's frames, read in the order they open. */
export class AnswerReader {
  readonly answer = new AnswerRecord();
  private readonly bounds: AnswerBounds;

  constructor(
    private readonly expect: AnswerExpectations,
    private readonly engines: AnswerEngines = {},
  ) {
    this.bounds = new AnswerBounds(expect.body);
  }

  get limits(): AnswerLimits {
    return this.bounds.limits;
  }

  /** One opened frame's text. */
  read(text: string): FrameRead {
    const frame = sessionFrame(text);
    if (frame === undefined) return { pieces: [], end: { type: "fault", breach: { kind: "broken", why: "sent a frame that is not a session frame" } } };
    if (frame.type === "error") return { pieces: [], end: { type: "report", report: readReport(frame, this.expect.provider.id, this.expect.body) } };
    // a frame holds one piece, a burst of them, or (non-stream) the whole answer beside its receipt
    const pieces: AnswerPiece[] = [];
    for (const piece of frame.type === "pieces" || frame.type === "done" ? (frame.pieces ?? []) : [frame]) {
      const breach = this.bounds.piece(piece);
      if (breach !== undefined) return { pieces, end: { type: "fault", breach } };
      try {
        this.answer.add(piece);
      } catch (err) {
        return { pieces, end: { type: "fault", breach: { kind: "broken", why: `sent a broken answer (${(err as Error).message})` } } };
      }
      pieces.push(piece);
    }
    if (frame.type !== "done") return { pieces };
    const started = performance.now();
    const verdict = checkReceipt(frame.receipt, this.expect, this.answer, this.engines);
    this.engines.timed?.(performance.now() - started);
    if (!verdict.valid || verdict.receipt === undefined) return { pieces, end: { type: "receipt_invalid", problems: verdict.problems } };
    const breach = this.bounds.done(verdict.receipt.usage.completion_tokens, verdict.receipt.finish_reason);
    if (breach !== undefined) return { pieces, end: { type: "fault", breach } };
    return { pieces, end: { type: "done", receipt: verdict.receipt, answer: this.answer, firstTokenMs: frame.first_token_ms } };
  }
}

function sessionFrame(text: string): SessionFrame | undefined {
  try {
    return SessionFrameSchema.parse(JSON.parse(text));
  } catch {
    return undefined;
  }
}

/**
 * DESIGN §5: a receipt must be this provider's, for these sealed bytes, and (given `answer`) for this answer, with
 * the request's nonces. Without `answer` and `body` (the gateway of a gateway-blind request, which holds neither)
 * it checks all the rest: signature, key, rung, serial, pins, request hash, version.
 */
export function checkReceipt(raw: unknown, expect: ReceiptContext & { body?: SessionPlaintext }, answer: AnswerRecord | undefined, engines: AnswerEngines = {}): ReceiptVerdict {
  const { provider, pin, entry, requestSha256, body } = expect;
  return verifyReceipt(raw, {
    // the key the checker's own evidence check proved, never just the one inside the receipt
    signingKey: provider.signing_key,
    providerId: provider.id,
    ...(pin === undefined ? {} : { pin }),
    trustLevel: provider.trust,
    ...(provider.serial === undefined ? {} : { serial: provider.serial }),
    model: entry,
    requestSha256,
    // what the caller will be shown: every token's logprobs (chat, legacy) and those before content (Responses)
    ...(answer === undefined
      ? {}
      : { content: answer.content, toolCalls: answer.toolCalls, reasoning: answer.reasoning, logprobs: answer.logprobs, contentLogprobs: answer.contentLogprobs }),
    // v3 covers tool calls, reasoning and the cached-token count, v4 logprobs too; an agent of this build signs nothing
    // older. Without the request (a gateway-blind request's gateway) either is the provider's to sign.
    ...(body === undefined ? {} : { version: body.top_logprobs === undefined ? RECEIPT_VERSION_CACHE : RECEIPT_VERSION_LOGPROBS }),
    ...(body === undefined ? {} : { gatewayNonce: body.nonce, clientNonce: body.client_nonce }),
  }, engines.signature === undefined ? {} : { signature: engines.signature });
}

/** A provider's fault as the caller hears it: svc's words for what it did, never the provider's. */
export const providerFault = (provider: string, why: string): ApiError =>
  new ApiError("provider_error", `Provider ${provider} ${why}, so the session was ended; retry the request.`);

/** A receipt that did not verify, as the caller hears it. */
export const receiptInvalid = (provider: string, problems: readonly string[]): ApiError =>
  new ApiError("receipt_invalid", `The receipt from provider ${provider} did not verify (${problems.join("; ")}), so its answer is not vouched for; retry the request.`);
