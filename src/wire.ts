// The coordinator's two WebSocket protocols (DESIGN §1), parsed with zod at each end: agents on
// `/v1/agent` (attest, advertise, run sealed sessions) and gateways on `/v1/gateway` (a copy of the directory
// kept by deltas, sealed requests placed on the provider the gateway chose, relayed sealed frames). Every session
// message carries only ciphertext for the prompt and tokens.
import { z } from "zod";
import { EvidenceSchema } from "./attestation.ts";
import { AttestationRecordSchema } from "./attestation-record.ts";
import type { ApiError } from "./errors.ts";
import { Hex32 } from "./hex.ts";
import { TRUST_LEVELS, type TrustLevel } from "./trust.ts";

export const AGENT_PATH = "/v1/agent";
export const GATEWAY_PATH = "/v1/gateway";
/** An agent's frames are small (a token, a receipt); anything bigger is a broken or hostile agent. */
export const AGENT_MAX_FRAME_BYTES = 1024 * 1024;
/** A sealed request can carry the gateway's 4 MiB body limit, base64-grown by a third. */
export const GATEWAY_MAX_FRAME_BYTES = 8 * 1024 * 1024;

const SessionId = z.string().regex(/^[A-Za-z0-9_-]{8,64}$/);
// Sealed bytes as base64. No pattern is matched over them per message: the end that opens them checks their
// AEAD tag, which any other character fails, so a regex here would only cost a pass over every frame.
const Base64 = z.string().max(GATEWAY_MAX_FRAME_BYTES);
const Alias = z.string().min(1).max(128);
const Trust = z.enum(TRUST_LEVELS);

/** SPEC §2.4's provider record, as the directory reports it (each gateway applies its own floor). */
export interface ProviderRecord {
  id: string;
  model_ids: string[];
  trust: TrustLevel;
  busy: boolean;
  waiting: number;
  /** Only at the `hardware` rung. */
  serial?: string;
}

/** A directory entry: the SPEC §2.4 record plus the attested keys a gateway seals to and checks receipts by. */
export const ProviderEntrySchema = z.strictObject({
  id: Hex32,
  model_ids: z.array(Alias),
  trust: Trust,
  busy: z.boolean(),
  waiting: z.number().int().nonnegative(),
  serial: z.string().optional(),
  signing_key: Hex32,
  sealing_key: Hex32,
});
export type ProviderEntry = z.infer<typeof ProviderEntrySchema> & ProviderRecord;

export const ToAgentSchema = z.discriminatedUnion("t", [
  z.strictObject({ t: z.literal("challenge"), nonce: Hex32 }),
  z.strictObject({ t: z.literal("granted"), rung: Trust, provider_id: Hex32, serial: z.string().optional(), refusals: z.array(z.string()) }),
  z.strictObject({ t: z.literal("refused"), reason: z.string() }),
  /** `whole`: the caller takes the answer in one piece (not a stream), so it comes back in one frame. */
  z.strictObject({ t: z.literal("session"), id: SessionId, alias: Alias, enc: Base64, ct: Base64, whole: z.literal(true).optional() }),
  z.strictObject({ t: z.literal("cancel"), id: SessionId }),
]);
export type ToAgent = z.infer<typeof ToAgentSchema>;

export const FromAgentSchema = z.discriminatedUnion("t", [
  z.strictObject({ t: z.literal("evidence"), evidence: EvidenceSchema }),
  z.strictObject({ t: z.literal("advertise"), aliases: z.array(Alias).max(64) }),
  z.strictObject({ t: z.literal("frame"), id: SessionId, data: Base64 }),
  /** The agent is free again; `error` says why a session ended without its last frame. */
  z.strictObject({ t: z.literal("end"), id: SessionId, error: z.string().max(500).optional() }),
  /** The agent is shutting down: route nothing more here; the running session may still finish. */
  z.strictObject({ t: z.literal("leaving") }),
]);
export type FromAgent = z.infer<typeof FromAgentSchema>;

const WireError = z.strictObject({ code: z.string(), message: z.string(), param: z.string().nullable(), retry_after_s: z.number().positive().optional() });
export type WireError = z.infer<typeof WireError>;

/** An API error as the coordinator tells it to a gateway, Retry-After included. */
export function toWireError(err: ApiError): WireError {
  return { code: err.code, message: err.message, param: err.param, ...(err.retryAfterS === undefined ? {} : { retry_after_s: err.retryAfterS }) };
}

export const FromGatewaySchema = z.discriminatedUnion("t", [
  /** The evidence a provider was last granted its rung for (`GET /v1/providers/{id}/attestation`). */
  z.strictObject({ t: z.literal("attestation"), rid: z.number().int(), id: Hex32 }),
  /**
   * A sealed request placed on the provider the gateway chose from its copy of the directory, with what it was
   * chosen for, so the coordinator can check the choice still holds (and answer `stale` when it does not).
   */
  z.strictObject({
    t: z.literal("place"),
    id: SessionId,
    provider: Hex32,
    alias: Alias,
    floor: Trust,
    pin: z.string().max(64).optional(),
    /** Providers that already failed this request before its session started. */
    exclude: z.array(Hex32).max(1000),
    enc: Base64,
    ct: Base64,
    /** The caller takes the answer in one piece (not a stream), so it may come back in one frame. */
    whole: z.literal(true).optional(),
  }),
  z.strictObject({ t: z.literal("cancel"), id: SessionId }),
]);
export type FromGateway = z.infer<typeof FromGatewaySchema>;

/** A directory entry as the gateways' copies hold it: with when it was last given a session, for routing's tie-break. */
export const DirectoryEntrySchema = ProviderEntrySchema.extend({ last_assigned: z.number().nonnegative() });
export type DirectoryEntry = ProviderEntry & { last_assigned: number };

export const ToGatewaySchema = z.discriminatedUnion("t", [
  /**
   * The directory: the whole of it when `reset` (first on every link), otherwise what changed since the last
   * one: entries to put (new or changed: load, rung, aliases) and ids that left routing.
   */
  z.strictObject({
    t: z.literal("directory"),
    reset: z.literal(true).optional(),
    /** The whole directory continues in the next message (the copy is not complete yet). */
    more: z.literal(true).optional(),
    put: z.array(DirectoryEntrySchema),
    gone: z.array(Hex32),
    /** This gateway's placements (and refusals) that `put` already counts, so its copy stops counting them itself. */
    placed: z.array(SessionId).optional(),
  }),
  /** null: no provider with that id is connected. */
  z.strictObject({ t: z.literal("attestation"), rid: z.number().int(), record: AttestationRecordSchema.nullable() }),
  /** The chosen provider no longer fits the request (left, changed, or another is less loaded): choose again. */
  z.strictObject({ t: z.literal("stale"), id: SessionId }),
  z.strictObject({ t: z.literal("rejected"), id: SessionId, error: WireError }),
  z.strictObject({ t: z.literal("frame"), id: SessionId, data: Base64 }),
  z.strictObject({ t: z.literal("end"), id: SessionId, error: z.string().optional() }),
  /** The provider left: before any of the session's frames was relayed (`started` false) the gateway may route elsewhere. */
  z.strictObject({ t: z.literal("gone"), id: SessionId, started: z.boolean(), reason: z.string() }),
]);
export type ToGateway = z.infer<typeof ToGatewaySchema>;

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
