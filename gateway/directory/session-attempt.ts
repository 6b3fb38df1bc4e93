// One provider's try at a session (DESIGN §8), for the coordinator client: choose, seal and place, relay the
// frames it sends back within the answer's bounds and deadlines, and check its receipt against what was sealed
// and relayed. It ends done, handed back to be re-routed, or stale; a fault is charged to the provider.
import type { Logger } from "pino";
import { ApiError } from "../../src/errors.ts";
import { CallerGone } from "../http/caller-gone.ts";
import type { FrameCipher } from "../../src/crypto/seal.ts";
import { nodeSha256Hex } from "../../src/crypto/sha256-node.ts";
import { verifySignatureNative } from "../../src/crypto/signing.ts";
import { answerLimits } from "../../src/session/answer-bounds.ts";
import { AnswerReader, providerFault, receiptInvalid } from "../../src/session/answer-reader.ts";
import type { Disputed } from "../../src/session/provider-report.ts";
import { fromWireError, type DirectoryEntry } from "../../src/wire/gateway.ts";
import { record } from "./directory-copy.ts";
import type { SessionEvent, SessionRequest } from "./directory.ts";
import type { SessionDeadlines } from "./deadlines.ts";
import { LiveSession, type SessionMessage } from "./live-session.ts";
import type { Breach, FaultSubject } from "./provider-faults.ts";
import type { Cut, HeldLedger } from "./held-bytes.ts";
import { randomBase64url } from "../../src/crypto/random-id.ts";

/** What the gateway sealed for one session: the receipt must cover exactly these bytes, and its frames open under `frames`. */
export interface Sealed {
  bytes: Buffer;
  frames: FrameCipher;
}

/**
 * What a session attempt ends in: done; handed back to be re-routed away from a provider that left or faulted
 * before starting; or a choice that no longer held, to be made again from the updated copy.
 */
export type Outcome =
  | { done: true }
  | { done: false; leftBy: string; fault?: ApiError; disputed?: Disputed }
  | { done: false; stale: true };

/** What an attempt needs of the client: its deadlines, its sessions in flight, its link and copy, its fault ledger. */
export interface AttemptHost {
  readonly deadlines: SessionDeadlines;
  /** The sessions in flight, by id: where the coordinator's messages for each are handed. */
  readonly sessions: Map<string, LiveSession>;
  /** What its sessions in flight hold, unread and kept, within the gateway's bounds. */
  readonly held: HeldLedger;
  readonly log: Logger;
  /** Chooses a provider from the copy, seals the request to it and places it there. */
  place(id: string, request: SessionRequest, exclude: readonly string[], maxBytes: number, signal: AbortSignal): Promise<{ provider: DirectoryEntry; sealed: Sealed }>;
  /** The copy stops counting session `id` on its provider. */
  settle(id: string): void;
  /** Gives the queue spot or the running session back. */
  cancel(id: string): void;
  /** Charges a fault to the provider's enrollment (provider-faults.ts). */
  charge(provider: FaultSubject, breach: Breach, requestId: string): void;
  /** The request was served: validation errors other providers claimed for it are contradicted. */
  served(requestId: string): void;
}

/** One provider's try at the session: choose, seal and place, relay its frames within bounds, check its receipt. */
export async function* attempt(host: AttemptHost, request: SessionRequest, exclude: readonly string[], mayReroute: boolean, signal: AbortSignal): AsyncGenerator<SessionEvent, Outcome, void> {
  const id = `s_${randomBase64url(12)}`;
  const { wireBytes } = answerLimits(request.body);
  let chosen: string | undefined;
  const live = new LiveSession(wireBytes, host.deadlines, () => host.cancel(id), host.held, request.whole === true, (cut, gone) => {
    logCut(host, request, chosen, cut, gone);
  });
  host.sessions.set(id, live);
  let finished = false;
  let relayed = 0;
  try {
    const { provider, sealed } = await host.place(id, request, exclude, wireBytes, signal);
    chosen = provider.id;
    yield { type: "provider", provider: record(provider) };
    /** The provider's fault: charged, then re-routed while the caller has seen nothing of it, else the caller's 502. */
    const fault = ({ kind, why }: Breach): Outcome => {
      host.charge(provider, { kind, why }, request.requestId);
      const error = providerFault(provider.id, why);
      if (mayReroute && request.pin === undefined && (relayed === 0 || request.whole === true)) return { done: false, leftBy: provider.id, fault: error };
      throw error;
    };
    const reader = new AnswerReader(
      { provider, ...(request.pin === undefined ? {} : { pin: request.pin }), entry: request.entry, body: request.body, requestSha256: nodeSha256Hex(sealed.bytes) },
      { signature: verifySignatureNative, timed: (ms) => request.timing?.add("verify", ms) },
    );
    const sent = performance.now();
    let firstFrame: number | undefined;
    for (;;) {
      // a pinned request never hops
      const next = await nextMessage(host, live, id, provider.id, request.pin === undefined, signal, () => (finished = true));
      if ("breach" in next) return fault(next.breach);
      if ("outcome" in next) return next.outcome;
      const { message } = next;
      if (message.t === "end") {
        finished = true;
        return fault({ kind: "broken", why: "ended the session without a result" });
      }
      firstFrame ??= performance.now() - sent;
      const text = openFrame(sealed.frames, message.data);
      if (text === undefined) return fault({ kind: "broken", why: "sent a frame that does not open under this session's key" });
      const { pieces, end } = reader.read(text);
      for (const piece of pieces) {
        live.keep(piece);
        relayed++;
        yield piece;
      }
      if (end === undefined) continue;
      if (end.type === "fault") return fault(end.breach);
      if (end.type === "receipt_invalid") {
        finished = true;
        host.log.warn({ provider: provider.id, request_id: request.requestId, problems: end.problems }, `receipt from provider ${provider.id} rejected`);
        host.charge(provider, { kind: "broken", why: "sent a receipt that does not verify" }, request.requestId);
        throw receiptInvalid(provider.id, end.problems);
      }
      if (end.type === "report") {
        const { report } = end;
        if (report.kind === "fault") return fault({ kind: "error", why: report.why });
        // a claim the gateway could not settle: another provider hears the request before the caller hears the claim
        if (report.kind === "disputed" && mayReroute && request.pin === undefined && relayed === 0) {
          finished = true;
          return { done: false, leftBy: provider.id, disputed: report };
        }
        throw report.error;
      }
      finished = true;
      // the agent's own time to first token; the rest of the wait for the first frame was its queue (and the hops)
      const agentMs = end.firstTokenMs ?? firstFrame;
      request.timing?.add("provider", agentMs);
      request.timing?.add("queue", firstFrame - agentMs);
      host.served(request.requestId);
      yield { type: "done", receipt: end.receipt, answer: end.answer };
      return { done: true };
    }
  } finally {
    release(host, live, id, finished);
  }
}

/** An attempt is over for its reader: nothing more is counted for it, and unless it ended on the provider's side it is stopped there. */
export function release(host: AttemptHost, live: LiveSession, id: string, finished: boolean): void {
  live.close();
  host.sessions.delete(id);
  host.settle(id);
  // hung up, or failed on our side: the queue spot or the running session is given back at once
  if (!finished) host.cancel(id);
}

/** What a session's reader does with its next message: a frame or the end to read, or how the session ended otherwise. */
export type NextMessage = { message: Extract<SessionMessage, { t: "frame" | "end" }> } | { outcome: Outcome } | { breach: Breach };

/**
 * The session's next message as every attempt reads it: the provider's frame or end; a stale choice or a provider gone
 * before starting (to hop when `mayHop`); a breach of its bounds; or the error the caller gets (gone mid-session, or
 * rejected from the queue). `ended` is called first whenever the session is over on the provider's side.
 */
export async function nextMessage(host: AttemptHost, live: LiveSession, id: string, provider: string, mayHop: boolean, signal: AbortSignal, ended: () => void): Promise<NextMessage> {
  for (;;) {
    let message: SessionMessage;
    try {
      message = await live.take(signal);
    } catch (err) {
      // a breach, or the ledger's cut, cancelled it already
      if (live.breach !== undefined || live.cut !== undefined) ended();
      if (live.breach === undefined) throw err;
      return { breach: live.breach };
    }
    // whatever the coordinator said of the session, its own counts hold it now
    host.settle(id);
    if (message.t === "frame") return { message };
    if (message.t === "started") continue;
    ended();
    if (message.t === "end") return { message };
    if (message.t === "stale") return { outcome: { done: false, stale: true } };
    // admission control dropped it from the queue (it waited too long)
    if (message.t === "rejected") throw fromWireError(message.error);
    if (!message.started && mayHop) return { outcome: { done: false, leftBy: provider } };
    if (!message.started) throw new ApiError("provider_unavailable", `Provider ${provider} went offline before the session started.`);
    throw new ApiError("provider_error", `Provider ${provider} went offline mid-session; start a new request.`);
  }
}

/** The ledger ended the session (held-bytes.ts), never the provider's fault: its own code in the log, and a stream's caller let go. */
export function logCut(host: AttemptHost, request: Pick<SessionRequest, "requestId" | "hangUp">, provider: string | undefined, { bound, unread, kept }: Cut, gone: CallerGone | undefined): void {
  const { unreadPerSession, total } = host.held.limits;
  const past =
    bound === "unread"
      ? `its caller left ${unread} bytes unread, past the ${unreadPerSession} a session may hold`
      : `it held the most (${unread} bytes unread, ${kept} of answer kept) when the gateway passed the ${total} it holds for all sessions`;
  host.log.warn(
    { request_id: request.requestId, provider, code: gone?.code ?? "overloaded", bound, unread_bytes: unread, kept_bytes: kept },
    `session of ${request.requestId} ended: ${past}; the provider is stopped, not charged, and ${gone ? "the caller's connection closed" : "the caller answered 503 overloaded"}`,
  );
  if (gone) request.hangUp?.(gone);
}

/** A frame opened under this session's key, in order; undefined for anything that does not open. */
function openFrame(frames: FrameCipher, data: string): string | undefined {
  try {
    return frames.open(data);
  } catch {
    return undefined;
  }
}
