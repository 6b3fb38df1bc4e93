// The coordinator's gateway protocol on `/v1/gateway` (DESIGN §1, §7): a copy of the directory kept by deltas,
// sealed requests placed on the provider the gateway chose, relayed sealed frames. Both ends are our own code and
// the link is admitted by the coordinator's secret, so a message is checked by hand for what its reader relies on,
// a few `typeof`s and no zod (issue 18: zod stays at the outer boundaries); whatever fails is a broken peer.
import { MAX_CANDIDATES, type SealedEnvelope } from "../blind/format.ts";
import type { Evidence } from "../trust/attestation.ts";
import { ApiError, ERROR_CODES, type ErrorCode } from "../errors.ts";
import { TRUST_LEVELS, type TrustLevel } from "../receipt/rungs.ts";

export const GATEWAY_PATH = "/v1/gateway";
/** A sealed request can carry the gateway's 4 MiB body limit, base64-grown by a third. */
export const GATEWAY_MAX_FRAME_BYTES = 8 * 1024 * 1024;
/** The most providers one placement may exclude (those that already failed it). */
export const MAX_EXCLUDED = 1000;
/**
 * The most sealed answer bytes the coordinator relays for one session whose placement names no `max_bytes`:
 * above the bound a gateway derives for the longest answer (src/session/answer-bounds.ts).
 */
export const MAX_SESSION_WIRE_BYTES = 64 * 1024 * 1024;

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

/**
 * A provider as `GET /v1/providers` lists it: with the SHA-256 of the evidence its rung rests on (src/trust/attestation.ts
 * evidenceDigest), so a caller that checked that evidence before need not fetch it again (client/candidates.ts).
 */
export interface ListedProvider extends ProviderRecord {
  evidence_sha256: string;
}

/** A directory entry: the SPEC §2.4 record plus the attested keys a gateway seals to and checks receipts by. */
export interface ProviderEntry extends ProviderRecord {
  signing_key: string;
  sealing_key: string;
}

/**
 * A directory entry as the coordinator sends it to the gateways' copies: with when it was last given a session, for
 * routing's tie-break, and the SHA-256 of the evidence the provider was granted its rung for. The rung, serial and
 * keys are the coordinator's word: a gateway lists, seals to and routes to what that evidence proves to it
 * (gateway/directory/provider-checks.ts).
 */
export interface DirectoryEntry extends ProviderEntry {
  last_assigned: number;
  evidence_sha256: string;
  /**
   * The enrollment the provider was admitted under, an opaque reference the coordinator vouches for (never the
   * token): a gateway charges its faults to it, so new keys on one enrollment do not start afresh. None: its own id.
   */
  enrollment?: string;
}

/** The coordinator's queue caps, as its gateways learn them (`--max-queue-per-provider`). */
export interface QueueCaps {
  per_provider: number;
}

export interface WireError {
  code: string;
  message: string;
  param: string | null;
  retry_after_s?: number;
}

/** An API error as the coordinator tells it to a gateway, Retry-After included. */
export function toWireError(err: ApiError): WireError {
  return { code: err.code, message: err.message, param: err.param, ...(err.retryAfterS === undefined ? {} : { retry_after_s: err.retryAfterS }) };
}

/** The coordinator's refusal of a placement (queue full, waited too long), as a gateway passes it on: its own codes, as they are. */
export function fromWireError(error: WireError): ApiError {
  const code = (error.code in ERROR_CODES ? error.code : "provider_unavailable") as ErrorCode;
  return new ApiError(code, error.message, { param: error.param, ...(error.retry_after_s === undefined ? {} : { retryAfterS: error.retry_after_s }) });
}

/**
 * What is placed: a request the gateway sealed to the provider (HPKE `enc` and `ct`), or a gateway-blind one (DESIGN
 * §10) the caller sealed to its candidates, relayed as it came, with the gateway's prompt-cache scope for the caller
 * beside it. The coordinator reads neither.
 */
export type PlacedRequest = { enc: string; ct: string } | { blind: SealedEnvelope; cache?: { scope: string; owner?: string } };

export type FromGateway =
  /** The evidence a provider was last granted its rung for, for the gateway to check (and show: `GET /v1/providers/{id}/attestation`). */
  | { t: "attestation"; rid: number; id: string }
  /**
   * A sealed request placed on the provider the gateway chose from its copy of the directory, with what it was
   * chosen for, so the coordinator can check the choice still holds (and answer `stale` when it does not).
   */
  | ({
      t: "place";
      id: string;
      provider: string;
      alias: string;
      floor: TrustLevel;
      pin?: string;
      /** Providers that already failed this request before its session started. */
      exclude: string[];
      /** The caller takes the answer in one piece (not a stream), so it may come back in one frame. */
      whole?: true;
      /**
       * The sealed answer bytes the gateway will take for this session (its answer's bounds): the coordinator
       * relays no more than this and one frame, then stops the provider, so an endless answer never piles up there.
       */
      max_bytes?: number;
      /** A gateway-blind request's candidates (at most three): the choice holds only among them. */
      candidates?: string[];
    } & PlacedRequest)
  | { t: "cancel"; id: string };

export type ToGateway =
  /**
   * The directory: the whole of it when `reset` (first on every link), otherwise what changed since the last
   * one: entries to put (new or changed: load, rung, aliases) and ids that left routing. `more`: the whole
   * directory continues in the next message. `placed`: this gateway's placements (and refusals) that `put`
   * already counts, so its copy stops counting them itself. `queue` (on `reset`): the coordinator's queue caps, so
   * a gateway can refuse from its copy, before any costly work, a request that only a full queue could take.
   */
  | { t: "directory"; reset?: true; more?: true; put: DirectoryEntry[]; gone: string[]; placed?: string[]; queue?: QueueCaps }
  /** The evidence as the agent signed it, chain included whatever rung it earned; null: no provider with that id is connected. */
  | { t: "attestation"; rid: number; evidence: Evidence | null }
  /** The chosen provider no longer fits the request (left, changed, or another is less loaded): choose again. */
  | { t: "stale"; id: string }
  /** The provider took the session from its queue: its deadlines run from now (gateway/directory/deadlines.ts). */
  | { t: "started"; id: string }
  | { t: "rejected"; id: string; error: WireError }
  /**
   * A sealed frame. A gateway-blind session's last one is `final`, with the provider's signed receipt (counts and
   * hashes) or its error's code beside it in the clear: what that session's gateway bills, checks and attributes by.
   */
  | { t: "frame"; id: string; data: string; final?: true; receipt?: Record<string, unknown>; code?: string }
  /** `code`: a gateway-blind request that opened for none of the provider's keys (`sealed_request_invalid`). */
  | { t: "end"; id: string; error?: string; code?: string }
  /** The provider left: before any of the session's frames was relayed (`started` false) the gateway may route elsewhere. */
  | { t: "gone"; id: string; started: boolean; reason: string };

/**
 * A session id, as both protocols hold it (an agent's zod schema too): checking it here keeps a broken gateway from
 * breaking an agent's link. It is a short id, not sealed bytes: no pattern is ever matched over those.
 */
export const SESSION_ID = /^[A-Za-z0-9_-]{8,64}$/;
/** The longest model alias either protocol carries. */
export const MAX_ALIAS_LENGTH = 128;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const isStr = (v: unknown): v is string => typeof v === "string";
const isNum = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const optional = (v: unknown, check: (v: unknown) => boolean) => v === undefined || check(v);
const isSessionId = (v: unknown): v is string => isStr(v) && SESSION_ID.test(v);
const isTrust = (v: unknown): v is TrustLevel => (TRUST_LEVELS as readonly unknown[]).includes(v);
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every(isStr);
const isDigest = (v: unknown): v is string => isStr(v) && /^[0-9a-f]{64}$/.test(v);

/** The JSON object in one text message, or undefined. */
function object(data: unknown): Obj | undefined {
  try {
    const value: unknown = JSON.parse(String(data));
    return isObj(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function isPlacement(m: Obj): boolean {
  return isSessionId(m.id) && isStr(m.provider) && isStr(m.alias) && m.alias.length > 0 && m.alias.length <= MAX_ALIAS_LENGTH && isTrust(m.floor) && optional(m.pin, isStr) &&
    isStrings(m.exclude) && m.exclude.length <= MAX_EXCLUDED && optional(m.whole, (w) => w === true) &&
    optional(m.max_bytes, (b) => isNum(b) && b > 0) && optional(m.candidates, (c) => isStrings(c) && c.length <= MAX_CANDIDATES) && isPlaced(m);
}

/**
 * Sealed by the gateway, or by the caller: the envelope is the agent's to read with its schema (a broken one is a
 * broken gateway's, which the agent refuses), so here only its form.
 */
function isPlaced(m: Obj): boolean {
  if (m.blind === undefined) return isStr(m.enc) && isStr(m.ct) && m.cache === undefined;
  return isObj(m.blind) && m.enc === undefined && m.ct === undefined && optional(m.cache, (c) => isObj(c) && isDigest(c.scope) && optional(c.owner, isDigest));
}

/** A gateway's message at the coordinator; undefined for anything that is not one. */
export function readFromGateway(data: unknown): FromGateway | undefined {
  const m = object(data);
  if (m === undefined) return undefined;
  const ok = m.t === "attestation" ? Number.isInteger(m.rid) && isStr(m.id) : m.t === "place" ? isPlacement(m) : m.t === "cancel" && isSessionId(m.id);
  return ok ? (m as FromGateway) : undefined;
}

function isEntry(e: unknown): boolean {
  return isObj(e) && isStr(e.id) && isStrings(e.model_ids) && isTrust(e.trust) && typeof e.busy === "boolean" && isNum(e.waiting) &&
    isNum(e.last_assigned) && isStr(e.signing_key) && isStr(e.sealing_key) && optional(e.serial, isStr) && isDigest(e.evidence_sha256) &&
    optional(e.enrollment, isStr);
}

function isToGateway(m: Obj): boolean {
  switch (m.t) {
    case "directory":
      return Array.isArray(m.put) && m.put.every(isEntry) && isStrings(m.gone) && optional(m.placed, isStrings) && optional(m.queue, (q) => isObj(q) && isNum(q.per_provider));
    case "attestation":
      // the evidence is a provider's: the gateway reads it with its zod schema before checking it
      return Number.isInteger(m.rid) && (m.evidence === null || isObj(m.evidence));
    case "stale":
    case "started":
      return isStr(m.id);
    case "rejected":
      return isStr(m.id) && isObj(m.error) && isStr(m.error.code) && isStr(m.error.message) && (m.error.param === null || isStr(m.error.param));
    case "frame":
      return isStr(m.id) && isStr(m.data) && optional(m.final, (f) => f === true) && optional(m.receipt, isObj) && optional(m.code, isStr);
    case "end":
      return isStr(m.id) && optional(m.error, isStr) && optional(m.code, isStr);
    case "gone":
      return isStr(m.id) && typeof m.started === "boolean" && isStr(m.reason);
    default:
      return false;
  }
}

/** The coordinator's message at a gateway; undefined for anything that is not one. */
export function readToGateway(data: unknown): ToGateway | undefined {
  const m = object(data);
  return m !== undefined && isToGateway(m) ? (m as ToGateway) : undefined;
}
