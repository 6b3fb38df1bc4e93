// The coordinator's agent protocol on `/v1/agent` (DESIGN §1): attest, advertise, run sealed sessions. Agents are
// other people's machines, so every message is parsed with zod at both ends; the gateway protocol, between our own
// parts, is src/wire/gateway.ts. Every session message carries only ciphertext for the prompt and tokens.
import * as z from "zod";
import { SealedEnvelopeSchema } from "../blind/format.ts";
import { EvidenceSchema } from "../trust/attestation.ts";
import { GATEWAY_MAX_FRAME_BYTES, MAX_ALIAS_LENGTH, SESSION_ID } from "./gateway.ts";
import { Hex32 } from "../receipt/hex.ts";
import { TRUST_LEVELS } from "../receipt/rungs.ts";

export const AGENT_PATH = "/v1/agent";
/** An agent's frames are small (a token, a receipt); anything bigger is a broken or hostile agent. */
export const AGENT_MAX_FRAME_BYTES = 1024 * 1024;

const SessionId = z.string().regex(SESSION_ID);
// Sealed bytes as base64. No pattern is matched over them per message: the end that opens them checks their
// AEAD tag, which any other character fails, so a regex here would only cost a pass over every frame.
const Base64 = z.string().max(GATEWAY_MAX_FRAME_BYTES);
const Alias = z.string().min(1).max(MAX_ALIAS_LENGTH);
const Trust = z.enum(TRUST_LEVELS);
// what rides in the clear beside a gateway-blind session's last frame: a receipt is the gateway's to check, so here
// only an object of bounded size; an error is a code, never a provider's text
const ClearReceipt = z.record(z.string().max(64), z.unknown()).refine((r) => Object.keys(r).length <= 64);
const ErrorCode = z.string().max(64).regex(/^[a-z_]+$/);

/** The prompt-cache scope a gateway derives for the caller (DESIGN §9), sent beside a gateway-blind request's sealed bytes. */
export const CacheScopeSchema = z.strictObject({ scope: Hex32, owner: Hex32.optional() });
export type CacheScope = z.infer<typeof CacheScopeSchema>;

/**
 * A gateway-blind session (DESIGN §10): the caller's own sealed request as it sent it, which this agent opens with its
 * sealing key, and the gateway's prompt-cache scope for the caller beside it. Whether the caller streams is the
 * envelope's (bound into its seal), so no `whole` rides beside it.
 */
export const BlindSessionSchema = z.strictObject({ t: z.literal("session"), id: SessionId, alias: Alias, blind: SealedEnvelopeSchema, cache: CacheScopeSchema.optional() });

export const ToAgentSchema = z.union([
  z.discriminatedUnion("t", [
    z.strictObject({ t: z.literal("challenge"), nonce: Hex32 }),
    z.strictObject({ t: z.literal("granted"), rung: Trust, provider_id: Hex32, serial: z.string().optional(), refusals: z.array(z.string()) }),
    z.strictObject({ t: z.literal("refused"), reason: z.string() }),
    /** `whole`: the caller takes the answer in one piece (not a stream), so it comes back with its receipt, in one frame unless it is long (agent/daemon/frame-batcher.ts). */
    z.strictObject({ t: z.literal("session"), id: SessionId, alias: Alias, enc: Base64, ct: Base64, whole: z.literal(true).optional() }),
    z.strictObject({ t: z.literal("cancel"), id: SessionId }),
  ]),
  BlindSessionSchema,
]);
export type ToAgent = z.infer<typeof ToAgentSchema>;

export const FromAgentSchema = z.discriminatedUnion("t", [
  z.strictObject({ t: z.literal("evidence"), evidence: EvidenceSchema }),
  z.strictObject({ t: z.literal("advertise"), aliases: z.array(Alias).max(64) }),
  /**
   * A sealed frame. A gateway-blind session's last one is `final`, with what its gateway reads in the clear beside
   * it: the signed receipt (counts and hashes, never text) or the code of the error sealed in it.
   */
  z.strictObject({ t: z.literal("frame"), id: SessionId, data: Base64, final: z.literal(true).optional(), receipt: ClearReceipt.optional(), code: ErrorCode.optional() }),
  /**
   * The agent is free again; `error` says why a session ended without its last frame, and `code` what a gateway-blind
   * caller's gateway tells it (`sealed_request_invalid`: the request opened for none of this provider's keys).
   */
  z.strictObject({ t: z.literal("end"), id: SessionId, error: z.string().max(500).optional(), code: ErrorCode.optional() }),
  /** The agent is shutting down: route nothing more here; the running session may still finish. */
  z.strictObject({ t: z.literal("leaving") }),
]);
export type FromAgent = z.infer<typeof FromAgentSchema>;

/** Parses one WebSocket text message; undefined for anything that is not valid JSON of this schema. */
export function parseMessage<T>(schema: z.ZodType<T>, data: unknown): T | undefined {
  let value: unknown;
  try {
    value = JSON.parse(String(data));
  } catch {
    return undefined;
  }
  const parsed = schema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}
