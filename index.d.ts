// Types of the package entry (index.js). The data types come from src/receipt/types.ts, which has no imports
// and so compiles anywhere; tsc holds the three declarations below to the implementation (test/e2e/receipts.test.ts
// assigns each to the other).
import type { ReceiptExpectations, ReceiptVerdict, SavedResponse } from "./src/receipt/types.js";

export type { FinishReason, Receipt, ReceiptCheck, ReceiptExpectations, ReceiptPayload, ReceiptStatus, ReceiptV1, ReceiptV2, ReceiptV3, ReceiptVerdict, ReportedUsage, SavedKind, SavedResponse, Usage } from "./src/receipt/types.js";

/** Earlier builds' receipt versions (still verified); this build's agents sign v3 (`ReceiptV3`), which adds `cached_tokens`. */
export declare const RECEIPT_VERSION: 1;
export declare const RECEIPT_VERSION_TOOLS: 2;

/**
 * Checks a receipt's signature and self-consistency, plus every expectation given. Never throws. `status` is
 * `valid` only when `signingKey` or `providerId` ties the key to a provider you trust; a receipt that holds
 * together without them is `unverified` (and `valid` is false).
 */
export declare function verifyReceipt(raw: unknown, expect?: ReceiptExpectations): ReceiptVerdict;

/**
 * Reads a saved response body, a receipt alone or an SSE transcript; throws when the text is none of them, or when two
 * JSON readers could read it differently (not I-JSON, RFC 7493: a name twice in an object, a lone surrogate, a byte
 * order mark, a number a double does not hold exactly).
 */
export declare function readSavedResponse(text: string): SavedResponse;

/** A saved file's bytes as the text the two functions here take; throws when they are not UTF-8 (a byte order mark is kept, to be refused). */
export declare function decodeSavedBytes(bytes: Uint8Array): string;

/** Reads saved text and checks its receipt against the content, usage and finish reason in it; throws as `readSavedResponse` does. */
export declare function verifySavedResponse(
  text: string,
  expect?: Omit<ReceiptExpectations, "content" | "usage" | "finishReason" | "toolCalls" | "reasoning">,
): ReceiptVerdict & { saved: SavedResponse };
