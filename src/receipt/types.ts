// The receipt's public types (RECEIPTS.md), with no imports, so the package entry's index.d.ts can hand this
// file to SDK users as it is; src/receipt/receipt.ts checks its zod schema parses to exactly `Receipt`.

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** v2, under `reasoning_format: "parsed"`: how many of the completion tokens were the think block. */
  completion_tokens_details?: { reasoning_tokens: number };
}

/** What an answer's `usage` says: the receipt's usage, plus `prompt_tokens_details` from a v3 receipt's `cached_tokens`. */
export interface ReportedUsage extends Usage {
  prompt_tokens_details?: { cached_tokens: number };
}

/** `tool_calls` only in a v2 or v3 receipt. */
export type FinishReason = "stop" | "length" | "tool_calls";

/** The fields every version has. */
interface ReceiptBase {
  id: string;
  /** Unix seconds at signing. */
  created: number;
  provider_id: string;
  trust_level: "process" | "transparent" | "hardware";
  /** Present at the `hardware` rung only. */
  serial?: string;
  model_id: string;
  model_hub_id: string;
  model_revision: string;
  model_sha256: string;
  request_sha256: string;
  response_sha256: string;
  gateway_nonce: string;
  client_nonce: string | null;
  signing_key: string;
  signature: string;
}

/** A plain answer: content only. */
export interface ReceiptV1 extends ReceiptBase {
  version: 1;
  usage: Omit<Usage, "completion_tokens_details">;
  finish_reason: "stop" | "length";
}

/** An answer to a request with tools or `reasoning_format: "parsed"`: it also covers the tool calls and the reasoning. */
export interface ReceiptV2 extends ReceiptBase {
  version: 2;
  usage: Usage;
  finish_reason: FinishReason;
  /** SHA-256 of the RFC 8785 JSON of `message.tool_calls` as returned; null when the answer made no call. */
  tool_calls_sha256: string | null;
  /** SHA-256 of `reasoning_content` as returned; null when there is none. */
  reasoning_sha256: string | null;
}

/** Every answer from a provider that keeps a prompt cache: v2's fields, plus how many prompt tokens it reused. */
export interface ReceiptV3 extends Omit<ReceiptV2, "version"> {
  version: 3;
  /** Prompt tokens read from the provider's cache for this caller, not evaluated afresh (at most `usage.prompt_tokens`). */
  cached_tokens: number;
}

/** An answer to a request that asked for log probabilities: v3's fields, plus the hashes of its logprobs (issue 43). */
export interface ReceiptV4 extends Omit<ReceiptV3, "version"> {
  version: 4;
  /** SHA-256 of the RFC 8785 JSON of every generated token's logprob entry, in order (chat's `logprobs.content`). */
  logprobs_sha256: string;
  /** The same for the entries that came before content text (Responses' `output_text` logprobs). */
  content_logprobs_sha256: string;
}

/** `svc_receipt`: the signed payload (DESIGN §5) plus `signing_key` and `signature`, all flat. */
export type Receipt = ReceiptV1 | ReceiptV2 | ReceiptV3 | ReceiptV4;

/** What the signature covers: the receipt less `signing_key` and `signature` (per version). */
export type ReceiptPayload = Receipt extends infer R ? (R extends Receipt ? Omit<R, "signing_key" | "signature"> : never) : never;

/**
 * What a verifier knows independently of the receipt; each one given is checked, the rest are not. Only
 * `signingKey` or `providerId` (the SHA-256 of the key) ties the receipt to a provider you trust: without
 * either, a receipt that holds together is `unverified`, never `valid`.
 */
export interface ReceiptExpectations {
  /** The Ed25519 key a directory attested for the provider (never the one inside the receipt). */
  signingKey?: string;
  /** The provider the request went to (from a listing you trust), or the pin it named (a prefix of the id). */
  providerId?: string;
  pin?: string;
  /** The rung the directory granted, and the serial it disclosed at `hardware`. */
  trustLevel?: Receipt["trust_level"];
  serial?: string;
  /** The catalog pins of the alias requested. */
  model?: { alias: string; hub_id: string; revision: string; sha256: string };
  /** SHA-256 of the exact plaintext sealed to the provider. */
  requestSha256?: string;
  /** The content returned to the caller; its SHA-256 must be `response_sha256`. */
  content?: string;
  /** `message.tool_calls` as returned (empty when none); a v2 or v3 receipt's `tool_calls_sha256` must cover it. */
  toolCalls?: readonly unknown[];
  /** `reasoning_content` as returned, or null when none; a v2 or v3 receipt's `reasoning_sha256` must cover it. */
  reasoning?: string | null;
  /**
   * Every token's logprob entry as the answer shows them (chat, legacy; empty when it shows none): a v4 receipt's
   * `logprobs_sha256` must cover them and count one per completion token; an older one covers none.
   */
  logprobs?: readonly unknown[];
  /** The entries the answer shows beside its content (Responses' `output_text`): a v4's `content_logprobs_sha256`; older ones, none. */
  contentLogprobs?: readonly unknown[];
  /** The receipt version the request calls for (a gateway of this build asks for 4 with logprobs, else 3). */
  version?: 1 | 2 | 3 | 4;
  gatewayNonce?: string;
  /** The caller's `x-svc-receipt-nonce`, or null when it sent none. */
  clientNonce?: string | null;
  /** What a response reported beside the receipt (any value; it is parsed): it must be the receipt's. */
  usage?: unknown;
  finishReason?: string | null;
}

export interface ReceiptCheck {
  check: string;
  ok: boolean;
  detail: string;
}

/**
 * `valid`: every check holds and the key is one you trust; `invalid`: a check failed; `unverified`: the
 * signature and hashes hold, but nothing given ties the key to a provider you trust (anyone can make a key).
 */
export type ReceiptStatus = "valid" | "invalid" | "unverified";

export interface ReceiptVerdict {
  status: ReceiptStatus;
  /** `status === "valid"`: false for an unverified receipt too, so a caller that reads only this fails closed. */
  valid: boolean;
  /** Present when the object has the receipt format (even if a check failed). */
  receipt?: Receipt;
  checks: ReceiptCheck[];
  /** The details of the failed checks, for error messages and logs. */
  problems: string[];
}

export type SavedKind = "response" | "receipt" | "stream" | "responses" | "responses-stream" | "completion" | "completion-stream" | "embeddings";

/** What `readSavedResponse` finds in a saved body, receipt or SSE transcript. */
export interface SavedResponse {
  kind: SavedKind;
  /** The `svc_receipt` found (not yet checked), or undefined when the file carries none. */
  receipt: unknown;
  /** The assistant content in the file; absent for a receipt alone, and when the answer in the file is not in
   * the gateway's shape (a problem says where), since then the receipt cannot vouch for what it means. */
  content?: string;
  /** The tool calls (as the gateway sent them, without a client's `parsed_arguments`) and reasoning; absent as `content` is. */
  toolCalls?: unknown[];
  reasoning?: string | null;
  /** The logprob entries shown (empty when none): every token's (chat, legacy), or those beside the content (Responses). */
  logprobs?: unknown[];
  contentLogprobs?: unknown[];
  usage?: unknown;
  finishReason?: string | null;
  /** Why the file itself cannot vouch for an answer (a failed stream, a missing receipt, …). */
  problems: string[];
}
