// DESIGN §5 at the gateway: a session's receipt must be its provider's, as the directory attested it, for the
// exact bytes sealed and the exact answer relayed. One function, whatever carried the frames.
import type { FrameCipher } from "../../src/crypto/seal.ts";
import { nodeSha256Hex } from "../../src/crypto/sha256-node.ts";
import { verifySignatureNative } from "../../src/crypto/signing.ts";
import type { AnswerRecord } from "../../src/receipt/answer-record.ts";
import { verifyReceipt, type ReceiptVerdict } from "../../src/receipt/index.ts";
import { RECEIPT_VERSION_CACHE, RECEIPT_VERSION_LOGPROBS } from "../../src/receipt/receipt.ts";
import type { DirectoryEntry } from "../../src/wire/gateway.ts";
import type { SessionRequest } from "./directory.ts";

/** What the gateway sealed for one session: the receipt must cover exactly these bytes. */
export interface Sealed {
  bytes: Buffer;
  frames: FrameCipher;
}

export function checkReceipt(raw: unknown, { request, provider, sealed, answer }: { request: SessionRequest; provider: DirectoryEntry; sealed: Sealed; answer: AnswerRecord }): ReceiptVerdict {
  return verifyReceipt(raw, {
    // the key the directory attested, never just the one inside the receipt
    signingKey: provider.signing_key,
    providerId: provider.id,
    ...(request.pin === undefined ? {} : { pin: request.pin }),
    trustLevel: provider.trust,
    ...(provider.serial === undefined ? {} : { serial: provider.serial }),
    model: request.entry,
    requestSha256: nodeSha256Hex(sealed.bytes),
    content: answer.content,
    toolCalls: answer.toolCalls,
    reasoning: answer.reasoning,
    // what the caller will be shown: every token's logprobs (chat, legacy) and those before content (Responses)
    logprobs: answer.logprobs,
    contentLogprobs: answer.contentLogprobs,
    // v3 covers tool calls, reasoning and the cached-token count, v4 logprobs too; an agent of this build signs nothing older
    version: request.body.top_logprobs === undefined ? RECEIPT_VERSION_CACHE : RECEIPT_VERSION_LOGPROBS,
    gatewayNonce: request.body.nonce,
    clientNonce: request.body.client_nonce,
  }, { signature: verifySignatureNative });
}
