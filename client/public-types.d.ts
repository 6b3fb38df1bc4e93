// The client package's public types (svc-agent-client's dist/index.d.ts, and the main package's index.d.ts re-exports
// them): written by hand so that a caller's types name no zod or @peculiar type. The receipt's data types come from
// src/receipt/types.ts, which has no imports; client/build.ts ships it beside this file. tsc holds each declaration
// to the implementation (test/unit/client/public-types.test.ts assigns each to the other).
import type { ReceiptExpectations, ReceiptVerdict, SavedResponse } from "../src/receipt/types.js";

export type { FinishReason, Receipt, ReceiptCheck, ReceiptExpectations, ReceiptPayload, ReceiptStatus, ReceiptV1, ReceiptV2, ReceiptV3, ReceiptVerdict, ReportedUsage, SavedKind, SavedResponse, Usage } from "../src/receipt/types.js";

/** The rungs of trust a provider's evidence can prove, lowest first. */
export type TrustLevel = "process" | "transparent" | "hardware";

export interface SealedFetchOptions {
  /** The gateway's API base, as the OpenAI SDKs take it (`https://host/v1`). */
  baseURL: string;
  apiKey?: string;
  /** The lowest rung a provider's evidence must prove to the caller (default process). */
  floor?: TrustLevel;
  /** A provider id (or a prefix of at least 8 hex digits): only that provider is sealed to. */
  provider?: string;
  /** Attestation roots the caller trusts, for the hardware rung: PEM text, each holding one certificate or more. */
  trustedRoots?: string[];
  /** Release keys (hex) the caller trusts, for the transparent rung. */
  releaseKeys?: Iterable<string>;
  /** Provider id → signing key (hex) known before: a provider presenting another is refused. */
  knownKeys?: Record<string, string>;
  /** The model catalog whose pins a receipt must match, as models.lock.json's JSON (default: svc's, bundled). */
  catalog?: unknown;
  /** What a request that names no reasoning_format gets, as the gateway's `--reasoning-format` (default none). */
  reasoningFormat?: "none" | "parsed";
  /** The fetch that carries the sealed bytes (default globalThis.fetch). */
  fetch?: typeof globalThis.fetch;
}

/**
 * A fetch for the OpenAI SDKs (`fetch` option) that makes svc's routes gateway-blind: each request is sealed to
 * providers whose evidence the caller checked, and each answer opened, its receipt checked, into the bytes the normal
 * path returns. Bodiless GETs pass through; anything else it cannot seal is refused unsent. Throws at once when the
 * runtime has no WebCrypto (a browser page outside a secure context).
 */
export declare function createSealedFetch(options: SealedFetchOptions): typeof globalThis.fetch;

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
