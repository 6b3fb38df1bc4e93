// A NATS request that "no responders" does not fail at once: a dead coordinator's fast failure looks the same as a
// live one's between NATS nodes (its node died and it is reconnecting to another), so the gateway's pings and
// placements ask once more after a pause before they take it as proof (gateway/fabric/nats.ts).
import { setTimeout as sleep } from "node:timers/promises";
import { NoRespondersError, type Msg, type NatsConnection, type RequestOptions } from "@nats-io/transport-node";

/** The pause before the second ask. A dead coordinator is still found within PING_MS and this. */
export const RECHECK_MS = 500;

/** NATS answered at once that no one listens on the subject (the error, or its cause, depending on the call's tracing). */
export const isNoResponders = (err: unknown): boolean => err instanceof NoRespondersError || (err as { cause?: unknown }).cause instanceof NoRespondersError;

/** An ask that had no responders was not asked again: by its recheck it no longer mattered. */
export class NoLongerAsked extends Error {}

/**
 * `nc.request`, asked once more after RECHECK_MS when the answer is "no responders" (no one received the first, so
 * none holds it twice), if `still()` says it matters then; `rechecking` runs when the pause starts. Rejects with the
 * last answer's error, or NoLongerAsked.
 */
export function askTwice(
  nc: Pick<NatsConnection, "request">,
  subject: string,
  body: string,
  options: RequestOptions,
  still: () => boolean,
  rechecking?: () => void,
): Promise<Msg> {
  return nc.request(subject, body, options).catch(async (err: unknown) => {
    if (!isNoResponders(err)) throw err;
    rechecking?.();
    await sleep(RECHECK_MS, undefined, { ref: false });
    if (!still()) throw new NoLongerAsked();
    return nc.request(subject, body, options);
  });
}
