// Receipts (DESIGN §5, RECEIPTS.md): the format, signing, and the checks a verifier runs. Pure functions of
// plain values, shared by the agent that signs, the gateway that verifies, `svc-agent verify` and the browser
// page /verify, so nothing here may need node: part of the portable verifier (src/receipt/index.ts).
import { bytesToHex, randomBytes } from "@noble/hashes/utils.js";
import * as z from "zod";
import { canonicalJson } from "./canonical-json.ts";
import { Hex16, Hex32, Hex64 } from "./hex.ts";
import { CLIENT_NONCE_PATTERN } from "./patterns.ts";
import { providerIdOf } from "./provider-id.ts";
import { sha256Hex } from "./sha256.ts";
import { SIGNATURE_DOMAINS, type SignatureDomain, verifySignature } from "./signature.ts";
import type { FinishReason, Receipt, ReceiptCheck, ReceiptExpectations, ReceiptPayload, ReceiptStatus, ReceiptVerdict, ReportedUsage, Usage } from "./types.ts";
import { TRUST_LEVELS } from "./rungs.ts";
import { logprobsSha256, type TokenLogprob } from "./logprobs.ts";

export type { FinishReason, Receipt, ReceiptCheck, ReceiptExpectations, ReceiptPayload, ReceiptStatus, ReceiptVerdict, ReportedUsage, Usage } from "./types.ts";

/** Earlier builds signed v1 for a plain answer and v2 for a request with tools or parsed reasoning; both still verify. */
export const RECEIPT_VERSION = 1;
export const RECEIPT_VERSION_TOOLS = 2;
/** What this build's agents sign for every answer without logprobs: v2 plus `cached_tokens`. */
export const RECEIPT_VERSION_CACHE = 3;
/** What they sign for an answer with logprobs: v3 plus the logprobs' hashes (issue 43). */
export const RECEIPT_VERSION_LOGPROBS = 4;

export { CLIENT_NONCE_PATTERN };

const count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

const UsageV1Schema = z.strictObject({ prompt_tokens: count, completion_tokens: count, total_tokens: count });
export const UsageSchema = UsageV1Schema.extend({ completion_tokens_details: z.strictObject({ reasoning_tokens: count }).optional() });
/** An answer's `usage` (OpenAI's shape): a v3 receipt's `cached_tokens` appear as `prompt_tokens_details.cached_tokens`. */
export const ReportedUsageSchema = UsageSchema.extend({ prompt_tokens_details: z.strictObject({ cached_tokens: count }).optional() });

export const FINISH_REASONS = ["stop", "length", "tool_calls"] as const satisfies readonly FinishReason[];

const Common = {
  id: z.string().regex(/^rcpt_[0-9a-f]{24}$/),
  created: count,
  provider_id: Hex32,
  trust_level: z.enum(TRUST_LEVELS),
  serial: z.string().min(1).max(200).optional(),
  model_id: z.string().min(1).max(200),
  model_hub_id: z.string().min(1).max(200),
  model_revision: z.string().min(1).max(200),
  model_sha256: Hex32,
  request_sha256: Hex32,
  response_sha256: Hex32,
  gateway_nonce: Hex16,
  client_nonce: z.string().regex(CLIENT_NONCE_PATTERN).nullable(),
  signing_key: Hex32,
  signature: Hex64,
};

/** v2's fields: Common, the usage with its details, the finish reasons with tool_calls, and two more hashes. */
const V2 = {
  ...Common,
  usage: UsageSchema,
  finish_reason: z.enum(FINISH_REASONS),
  tool_calls_sha256: Hex32.nullable(),
  reasoning_sha256: Hex32.nullable(),
};
/** v3: v2 plus the cached-token count; v4 adds the logprobs' hashes to it. */
const V3 = { ...V2, cached_tokens: count };

/** The flat object callers see as `svc_receipt`: the payload plus the key that signed it and the signature. */
export const ReceiptSchema = z.discriminatedUnion("version", [
  z.strictObject({ version: z.literal(RECEIPT_VERSION), ...Common, usage: UsageV1Schema, finish_reason: z.enum(["stop", "length"]) }),
  z.strictObject({ version: z.literal(RECEIPT_VERSION_TOOLS), ...V2 }),
  z.strictObject({ version: z.literal(RECEIPT_VERSION_CACHE), ...V3 }),
  z.strictObject({ version: z.literal(RECEIPT_VERSION_LOGPROBS), ...V3, logprobs_sha256: Hex32, content_logprobs_sha256: Hex32 }),
]);

/** The `usage` an answer carries for this receipt: its own, plus `prompt_tokens_details` from a v3's `cached_tokens`. */
export function reportedUsage(receipt: Receipt): ReportedUsage {
  return "cached_tokens" in receipt ? { ...receipt.usage, prompt_tokens_details: { cached_tokens: receipt.cached_tokens } } : receipt.usage;
}

/** What `tool_calls_sha256` covers: the RFC 8785 JSON of the calls as returned; null for an answer without calls. */
export function toolCallsSha256(calls: readonly unknown[]): string | null {
  return calls.length === 0 ? null : sha256Hex(canonicalJson(calls));
}

/** What `reasoning_sha256` covers: the reasoning text as returned; null when there is none. */
export function reasoningSha256(reasoning: string | null): string | null {
  return reasoning === null ? null : sha256Hex(reasoning);
}

// the published types (types.ts) and the schema must describe the same object, in both directions
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const schemaIsReceipt: Same<z.infer<typeof ReceiptSchema>, Receipt> = true;
void schemaIsReceipt;

export function newReceiptId(): string {
  return `rcpt_${bytesToHex(randomBytes(12))}`;
}

/** What the signature covers: the receipt without `signing_key` and `signature`. */
export function payloadOf(receipt: Receipt): ReceiptPayload {
  const { signing_key: _key, signature: _signature, ...payload } = receipt;
  return payload as ReceiptPayload;
}

/** What signs a receipt: the agent's Ed25519 key (src/crypto/signing.ts), kept out of this portable module. */
export interface ReceiptSigner {
  readonly publicKey: string;
  sign(domain: SignatureDomain, payload: unknown): string;
}

export function signReceipt(signer: ReceiptSigner, payload: ReceiptPayload): Receipt {
  return { ...payload, signing_key: signer.publicKey, signature: signer.sign(SIGNATURE_DOMAINS.receipt, payload) } as Receipt;
}

/**
 * Runs every check that applies; never throws on hostile input. The verdict is `valid` only when the key is
 * tied to the provider through `signingKey` or `providerId`: a fresh key signs a self-consistent receipt
 * claiming any rung and serial, so without them it is `unverified`. `engines.signature` swaps in another
 * implementation of the same check (the gateway's, on node's native Ed25519; see src/crypto/signing.ts).
 */
export function verifyReceipt(raw: unknown, expect: ReceiptExpectations = {}, engines: { signature?: typeof verifySignature } = {}): ReceiptVerdict {
  const checkSignature = engines.signature ?? verifySignature;
  const parsed = ReceiptSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
    return verdict(undefined, false, [{ check: "format", ok: false, detail: `not a v${RECEIPT_VERSION}, v${RECEIPT_VERSION_TOOLS}, v${RECEIPT_VERSION_CACHE} or v${RECEIPT_VERSION_LOGPROBS} receipt (${where}${issue?.message ?? "invalid"})` }]);
  }
  const r = parsed.data;
  const checks: ReceiptCheck[] = [];
  const add = (check: string, ok: boolean, good: string, bad: string) => checks.push({ check, ok, detail: ok ? good : bad });
  const same = (check: string, actual: unknown, expected: unknown, what: string) =>
    add(check, actual === expected, `${what} is ${String(expected)}`, `${what} is ${String(actual)}, expected ${String(expected)}`);

  add("signature", checkSignature(r.signing_key, SIGNATURE_DOMAINS.receipt, payloadOf(r), r.signature),
    `Ed25519 signature by ${r.signing_key} verifies`, `the signature does not verify under ${r.signing_key}`);
  add("provider_id", providerIdOf(r.signing_key) === r.provider_id,
    "provider_id is the SHA-256 of the signing key", "provider_id is not the SHA-256 of the signing key");
  if (expect.signingKey !== undefined) same("signing_key", r.signing_key, expect.signingKey, "the signing key");
  if (expect.providerId !== undefined) same("provider", r.provider_id, expect.providerId, "provider_id");
  if (expect.pin !== undefined) {
    add("pin", r.provider_id.startsWith(expect.pin), `provider_id matches the pin ${expect.pin}`, `provider_id ${r.provider_id} does not match the pin ${expect.pin}`);
  }
  const hardware = r.trust_level === "hardware";
  add("serial", (r.serial !== undefined) === hardware,
    hardware ? "a serial is given at the hardware rung" : "no serial below the hardware rung",
    hardware ? "no serial at the hardware rung" : `a serial at the ${r.trust_level} rung, where none is disclosed`);
  if (expect.trustLevel !== undefined) same("trust_level", r.trust_level, expect.trustLevel, "trust_level");
  if (expect.trustLevel === "hardware" && expect.serial !== undefined) same("serial", r.serial, expect.serial, "serial");
  if (expect.model !== undefined) {
    same("model_id", r.model_id, expect.model.alias, "model_id");
    same("model_hub_id", r.model_hub_id, expect.model.hub_id, "model_hub_id");
    same("model_revision", r.model_revision, expect.model.revision, "model_revision");
    same("model_sha256", r.model_sha256, expect.model.sha256, "model_sha256");
  }
  if (expect.requestSha256 !== undefined) same("request_sha256", r.request_sha256, expect.requestSha256, "request_sha256");
  if (expect.content !== undefined) {
    same("response_sha256", r.response_sha256, sha256Hex(expect.content), "response_sha256 (SHA-256 of the content)");
  }
  if (expect.version !== undefined) same("version", r.version, expect.version, "the receipt version");
  if (expect.toolCalls !== undefined) {
    const covered = r.version === RECEIPT_VERSION ? null : r.tool_calls_sha256;
    same("tool_calls_sha256", covered, toolCallsSha256(expect.toolCalls), "tool_calls_sha256 (SHA-256 of the tool calls)");
  }
  if (expect.reasoning !== undefined) {
    const covered = r.version === RECEIPT_VERSION ? null : r.reasoning_sha256;
    same("reasoning_sha256", covered, reasoningSha256(expect.reasoning), "reasoning_sha256 (SHA-256 of the reasoning)");
  }
  // what the answer shows of logprobs must be what a v4 receipt covers; an older receipt covers none
  const v4 = r.version === RECEIPT_VERSION_LOGPROBS ? r : undefined;
  const covers = (check: string, shown: readonly unknown[], hash: string | undefined, what: string) => {
    if (hash === undefined) add(check, shown.length === 0, "no logprobs, and the receipt covers none", `a v${r.version} receipt covers no logprobs, and the answer shows ${shown.length}`);
    else same(check, hash, logprobsSha256(shown as TokenLogprob[]), what);
  };
  if (expect.logprobs !== undefined) {
    covers("logprobs_sha256", expect.logprobs, v4?.logprobs_sha256, "logprobs_sha256 (SHA-256 of every token's logprobs)");
    if (v4 !== undefined) {
      add("logprobs", expect.logprobs.length === r.usage.completion_tokens, "one logprob entry per completion token",
        `${expect.logprobs.length} logprob entries for ${r.usage.completion_tokens} completion tokens`);
    }
  }
  if (expect.contentLogprobs !== undefined) covers("content_logprobs_sha256", expect.contentLogprobs, v4?.content_logprobs_sha256, "content_logprobs_sha256 (SHA-256 of the content's logprobs)");
  if (expect.gatewayNonce !== undefined) same("gateway_nonce", r.gateway_nonce, expect.gatewayNonce, "gateway_nonce");
  if (expect.clientNonce !== undefined) same("client_nonce", r.client_nonce, expect.clientNonce, "client_nonce");
  const { prompt_tokens, completion_tokens, total_tokens } = r.usage;
  add("usage", total_tokens === prompt_tokens + completion_tokens, "usage adds up", "usage.total_tokens is not prompt_tokens + completion_tokens");
  if ("cached_tokens" in r) {
    add("cached_tokens", r.cached_tokens <= prompt_tokens, "cached_tokens is within the prompt", "cached_tokens is more than usage.prompt_tokens");
  }
  if (expect.usage !== undefined) {
    const reported = ReportedUsageSchema.safeParse(expect.usage);
    const own = reportedUsage(r);
    const matches = reported.success && canonicalJson(reported.data) === canonicalJson(own);
    add("usage", matches, "the reported usage is the receipt's", `the reported usage ${JSON.stringify(expect.usage)} is not the receipt's ${JSON.stringify(own)}`);
  }
  if (expect.finishReason !== undefined) same("finish_reason", r.finish_reason, expect.finishReason, "finish_reason");
  // provider_id is checked above to be the key's hash, so a trusted id pins the key as much as the key does
  const trusted = expect.signingKey !== undefined || expect.providerId !== undefined;
  return verdict(r, trusted, checks);
}

/** `invalid` when any check failed, else `valid` or `unverified` by whether the key is trusted. */
export function receiptStatus(problems: readonly string[], trusted: boolean): ReceiptStatus {
  if (problems.length > 0) return "invalid";
  return trusted ? "valid" : "unverified";
}

function verdict(receipt: Receipt | undefined, trusted: boolean, checks: ReceiptCheck[]): ReceiptVerdict {
  const problems = checks.filter((c) => !c.ok).map((c) => c.detail);
  const status = receiptStatus(problems, trusted);
  return { status, valid: status === "valid", ...(receipt ? { receipt } : {}), checks, problems };
}
