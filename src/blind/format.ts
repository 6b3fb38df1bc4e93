// Gateway-blind requests (DESIGN §10, SEALING.md): what travels in the clear beside the sealed bytes, the labels the
// seals are bound by, and the padding that leaves lengths only in 512-byte buckets. Portable: no node: module.
import * as z from "zod";
import { ROUTE_KINDS } from "../openai/route-kinds.ts";
import { Hex32 } from "../receipt/hex.ts";

/** The sealed request's media type, also bound into every seal. */
export const SEALED_REQUEST_TYPE = "application/svc-sealed+json";
/** The relayed answer's media type: one line per sealed frame (lines.ts). */
export const SEALED_FRAMES_TYPE = "application/svc-sealed-frames";
/** Every sealed plaintext is padded to a multiple of this many bytes (OpenPCC's chunk size). */
export const PAD_BYTES = 512;
/** A request is sealed to at most this many candidate providers. */
export const MAX_CANDIDATES = 3;
/** The most a sealed request's ciphertext may be, in bytes: the gateway's body limit bounds it first. */
export const MAX_SEALED_BYTES = 4 * 1024 * 1024;

const Base64url = (max: number) => z.string().max(max).regex(/^[A-Za-z0-9_-]*$/, "expected base64url");

export const CandidateSchema = z.strictObject({
  /** The provider id (64 lowercase hex), as the caller checked its evidence. */
  provider: Hex32,
  /** HPKE encapsulated key to that provider's attested X25519 key. */
  enc: Base64url(64),
  /** The request key, sealed in that HPKE context. */
  key: Base64url(128),
});
export type Candidate = z.infer<typeof CandidateSchema>;

/** What the gateway reads, and the agent checks against what it opens: everything else is sealed. */
export const SealedEnvelopeSchema = z.strictObject({
  v: z.literal(1),
  kind: z.enum(ROUTE_KINDS),
  /** The catalog alias the plaintext's `model` names. */
  alias: z.string().min(1).max(128).regex(/^[a-z0-9][a-z0-9._-]*$/),
  stream: z.boolean(),
  /** The clear budget: the most completion tokens the answer may have (admission, billing, the relay's bounds). */
  max_tokens: z.number().int().positive().max(1_000_000),
  /** SHA-256 of the plaintext bytes, which the receipt's request_sha256 must equal. */
  request_sha256: Hex32,
  candidates: z.array(CandidateSchema).min(1).max(MAX_CANDIDATES),
  ct: Base64url(Math.ceil((MAX_SEALED_BYTES * 4) / 3) + 4),
}).refine((e) => new Set(e.candidates.map((c) => c.provider)).size === e.candidates.length, { message: "each candidate once" });
export type SealedEnvelope = z.infer<typeof SealedEnvelopeSchema>;

/** The clear fields every seal of one request is bound to. */
export type Clear = Pick<SealedEnvelope, "kind" | "alias" | "stream" | "max_tokens" | "request_sha256">;

const utf8 = new TextEncoder();
const joined = (...parts: string[]) => utf8.encode(parts.join("\0"));

/** HPKE info for the context sealed to one candidate: the key opens only for that provider and alias. */
export const infoFor = (alias: string, provider: string): Uint8Array => joined("svc-blind/v1", SEALED_REQUEST_TYPE, alias, provider);

/** The request body's associated data: the clear fields the gateway reads, so it can change none of them. */
export const requestAad = (clear: Clear): Uint8Array =>
  joined("svc-blind-request/v1", SEALED_REQUEST_TYPE, clear.alias, clear.kind, clear.stream ? "1" : "0", String(clear.max_tokens), clear.request_sha256);

/** One answer frame's associated data: who answered, for which alias, and whether it is the last. */
export const frameAad = (alias: string, provider: string, final: boolean): Uint8Array => joined("svc-blind-frame/v1", SEALED_REQUEST_TYPE, alias, provider, final ? "1" : "0");

/** The HPKE exporter label both ends derive the answer's key with. */
export const RESPONSE_KEY_LABEL = utf8.encode("svc-blind-response/v1");

/** `bytes`, then 0x80, then zeros to the next multiple of PAD_BYTES (ISO/IEC 7816-4). */
export function pad(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(Math.ceil((bytes.length + 1) / PAD_BYTES) * PAD_BYTES);
  out.set(bytes);
  out[bytes.length] = 0x80;
  return out;
}

/** The bytes `pad` padded, or undefined when the padding is not exactly that. */
export function unpad(padded: Uint8Array): Uint8Array | undefined {
  if (padded.length === 0 || padded.length % PAD_BYTES !== 0) return undefined;
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end--;
  return end >= 0 && padded[end] === 0x80 ? padded.subarray(0, end) : undefined;
}

/** Base64url without padding, for any runtime (btoa is in Node, Deno, Bun and browsers). */
export function toBase64url(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function fromBase64url(text: string): Uint8Array {
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}
