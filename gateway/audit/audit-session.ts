// How an audit reaches a provider: the ordinary path (gateway/openai/session-for.ts), under the auditor's own
// principal, pinned, run to the verified receipt within a deadline. No side door: what the provider is sent is what
// a caller's same body would seal.
import { randomBytes } from "node:crypto";
import { ApiError } from "../../src/errors.ts";
import type { AnswerPiece } from "../../src/receipt/answer-record.ts";
import type { Gateway } from "../context.ts";
import type { Principal } from "../keys/auth.ts";
import { sessionFor } from "../openai/session-for.ts";
import type { SendAudit } from "./auditor.ts";

/** An audit's session ends within this, whatever the provider does. */
export const AUDIT_SESSION_DEADLINE_MS = 10 * 60_000;

/**
 * Each audit goes under one of the auditor's identities (identities.ts), as a caller's request goes under its key: its
 * own tenant in the parse queues, and the cache scope and owner a caller's key would have.
 */
export function sendThrough(gateway: Gateway, identities: { pick(): Promise<Principal> }): SendAudit {
  return async (kind, bytes, pin, headers = {}) => {
    const principal = await identities.pick();
    const signal = AbortSignal.timeout(AUDIT_SESSION_DEADLINE_MS);
    const requestId = `audit_${randomBytes(8).toString("hex")}`;
    const { request, open } = await sessionFor({ gateway, principal, signal, requestId }, kind, bytes, headers, { pin });
    let provider: string | undefined;
    let pieces: AnswerPiece[] = [];
    for await (const event of open()) {
      // a session re-routed before its first piece starts over with its new provider
      if (event.type === "provider") [provider, pieces] = [event.provider.id, []];
      else if (event.type === "done") return { provider, principal, request, receipt: event.receipt, answer: event.answer, pieces };
      else pieces.push(event);
    }
    throw new ApiError("provider_error", "The provider ended the audit's session without a result.");
  };
}
