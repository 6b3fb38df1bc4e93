// What the HTTP layer needs from the provider side: list the live providers, run a session on one. The
// coordinator client implements it (tests may fake it), so the routes never change with where providers live.
import type { AttestationRecord } from "../../src/trust/attestation-record.ts";
import type { CatalogEntry } from "../../src/catalog.ts";
import { ApiError } from "../../src/errors.ts";
import type { Receipt } from "../../src/receipt/receipt.ts";
import type { AnswerPiece, AnswerRecord } from "../../src/receipt/answer-record.ts";
import type { SessionPlaintext } from "../../src/session/sealed-request.ts";
import type { TrustLevel } from "../../src/receipt/rungs.ts";
import type { CallerGone } from "../http/caller-gone.ts";
import type { ServerTiming } from "../http/server-timing.ts";
import type { CacheScope } from "../../src/wire/agent.ts";
import type { ListedProvider, ProviderRecord } from "../../src/wire/gateway.ts";
import type { SealedEnvelope } from "../../src/blind/format.ts";

export interface SessionRequest {
  /** The request as the gateway's parser built it, sealed whole to whichever provider takes it. */
  body: SessionPlaintext;
  /** The catalog entry `body.model` names; the receipt must name its alias and pins. */
  entry: CatalogEntry;
  /** The gateway's trust floor: only providers at or above it may take the session. */
  floor: TrustLevel;
  /** `provider` / `provider_key_id`: whole id or a prefix of at least 8 characters. */
  pin?: string;
  /**
   * Opaque and per caller (never a raw secret): an idle provider that last took this key is preferred, so a
   * conversation returns to where its prompt cache may be. A pin overrides it.
   */
  affinity?: string;
  requestId: string;
  /** A non-stream caller: the agent may send the whole answer in one frame, beside its receipt. */
  whole?: boolean;
  /** Where the session's steps are timed (route, seal, queue, provider, verify), for Server-Timing. */
  timing?: ServerTiming;
  /** Closes the caller's connection, as when it hangs up: it left more unread than the gateway holds for it. */
  hangUp?: (why: CallerGone) => void;
}

/**
 * A gateway-blind request (DESIGN §10): the caller's envelope, relayed as it came, to one of its candidates; the
 * gateway read only its clear fields.
 */
export interface BlindRequest extends Pick<SessionRequest, "entry" | "floor" | "affinity" | "requestId" | "timing" | "hangUp"> {
  envelope: SealedEnvelope;
  /** The caller's prompt-cache scope, which the agent joins to what it opens (none for embeddings). */
  cache?: CacheScope;
}

/** What admission reads of a request before any costly work: where it would go (a blind one: among its candidates). */
export type AdmissionRequest = Pick<SessionRequest, "entry" | "floor" | "pin"> & { only?: readonly string[] };

export type SessionEvent =
  /** The provider chosen for the session (sent again if an unpinned request is re-routed before it starts). */
  | { type: "provider"; provider: ProviderRecord }
  /** Content, reasoning apart, or a piece of a tool call, as the provider sent it. */
  | AnswerPiece
  /** The provider's receipt, verified against what was sealed and relayed (DESIGN §5), and that answer. */
  | { type: "done"; receipt: Receipt; answer: AnswerRecord };

export type BlindEvent =
  /** The candidate that takes the session (again when it is re-routed before its first frame). */
  | { type: "provider"; provider: ProviderRecord }
  /** One sealed frame, opaque, as the provider sent it; the last is final. */
  | { type: "frame"; data: string; final: boolean }
  /** The session's signed receipt, checked against the provider's attested key and the envelope (never the answer). */
  | { type: "done"; receipt: Receipt }
  /** The provider's final frame holds an error: the gateway reads only its code. */
  | { type: "failed"; code: string };

export interface Directory {
  /** Whether the link to the coordinator is up now (`GET /healthz`). */
  readonly connected: boolean;
  /** Throws ApiError `directory_unavailable` when it cannot list. */
  list(): Promise<ListedProvider[]>;
  /** The evidence provider `id` (a whole id) was last granted its rung for; undefined when it is not connected. */
  attestation(id: string): Promise<AttestationRecord | undefined>;
  /**
   * Admission before any costly work on the request (its schemas), from what is known now without waiting: throws
   * 503 overloaded when every provider that could take it has a full queue. Advisory: the coordinator decides
   * again at placement, where every other answer (no provider, a pin offline) is given as ever.
   */
  admit(request: AdmissionRequest): void;
  /**
   * Chooses a provider (SPEC §4.1 routing), waits in its queue, then streams its deltas and one `done`.
   * Aborting the signal leaves the queue or ends the session on the provider; failures are ApiErrors
   * (`provider_unavailable`, `provider_error`, `directory_unavailable`, `receipt_invalid`, …).
   */
  open(request: SessionRequest, signal: AbortSignal): AsyncIterable<SessionEvent>;
  /** A gateway-blind session: chosen among its candidates, re-routed as `open`'s, its frames relayed unopened. */
  openBlind(request: BlindRequest, signal: AbortSignal): AsyncIterable<BlindEvent>;
  close(): Promise<void>;
}

/** Lists through any directory; a failure that is not already ours becomes SPEC §4.2's 502. */
export async function readDirectory(directory: Directory): Promise<ListedProvider[]> {
  try {
    return await directory.list();
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new ApiError("directory_unavailable", "The provider directory cannot list providers right now; try again shortly.");
  }
}
