// Reads other gateways' messages on NATS: an affinity message (`svc.affinity`), a placement of a conversation's affinity
// key (a SHA-256, gateway/keys/cache-scope.ts) on a provider, and an audit hint (`svc.audit`), an audit's id. Anything
// else is dropped: routing only prefers what it reads, and a hint only makes the gateway read its store sooner.
import { z } from "zod";
import { SUBJECT_TOKEN } from "../../src/wire/nats.ts";
import { AUDIT_ID } from "../keys/audit-store.ts";

/** A base64url SHA-256 (43 characters) and a provider id that can be a subject token, as every provider's is. */
const AffinityMessage = z.object({ k: z.string().regex(/^[A-Za-z0-9_-]{43}$/), p: z.string().regex(SUBJECT_TOKEN) });

/** The largest message read: a key, an id and the JSON around them. */
const MAX_BYTES = 512;

export function readAffinity(data: Uint8Array): { k: string; p: string } | undefined {
  if (data.length > MAX_BYTES) return undefined;
  try {
    const parsed = AffinityMessage.safeParse(JSON.parse(Buffer.from(data).toString("utf8")));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

const AuditHint = z.object({ a: z.string().regex(AUDIT_ID) });

export function readAuditHint(data: Uint8Array): string | undefined {
  if (data.length > MAX_BYTES) return undefined;
  try {
    const parsed = AuditHint.safeParse(JSON.parse(Buffer.from(data).toString("utf8")));
    return parsed.success ? parsed.data.a : undefined;
  } catch {
    return undefined;
  }
}
