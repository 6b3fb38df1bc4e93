// The NATS subjects gateways and coordinators speak on (DESIGN §7, docs/architecture.md "Replicas on NATS"). A
// message body is the very JSON the `/v1/gateway` WebSocket carries (src/wire/gateway.ts: so the sealed ciphertext
// is the same bytes); who sent it, the feed's sequence number and what a control message asks ride in headers, and
// every message a coordinator publishes carries its signature there too (DESIGN §11: signedPart below).
import { nodeSha256Hex } from "../crypto/sha256-node.ts";

/** To the coordinator holding provider `id`'s socket: `place` and `attestation` (a request: "no responders" when no one holds it). */
export const providerSubject = (id: string): string => `svc.p.${id}`;
/** Coordinator `c`'s directory feed: deltas, and a beat each FEED_BEAT_MS when nothing changed. */
export const feedSubject = (c: string): string => `svc.dir.${c}`;
/** Every coordinator's feed, as a gateway listens. */
export const ALL_FEEDS = "svc.dir.*";
/** Gateway `g`'s own subject: snapshots, placed acks, stale/rejected and the sealed frames of its sessions. */
export const gatewaySubject = (g: string): string => `svc.g.${g}`;
/** Coordinator `c` itself: a gateway's ping (a request, which also proves the gateway alive), snapshot ask and cancel. */
export const coordinatorSubject = (c: string): string => `svc.c.${c}`;
/** A gateway that just (re)connected asks every coordinator for its snapshot. */
export const HELLO_SUBJECT = "svc.hello";
/** A coordinator that took provider `id`'s socket says so; an older holder closes its own (the newer wins). */
export const claimSubject = (id: string): string => `svc.claim.${id}`;
export const ALL_CLAIMS = "svc.claim.*";
/** Every gateway: a placement another gateway made for a conversation's affinity key, `{"k": key, "p": provider}`. */
export const AFFINITY_SUBJECT = "svc.affinity";
/** Every gateway: another concluded an audit, `{"a": id}`; a hint to read the shared store now, never applied itself. */
export const AUDIT_SUBJECT = "svc.audit";

/** Headers: the sender (gateway or coordinator id), the feed's sequence number, a claim's epoch, what a control message asks. */
export const H_FROM = "svc-from";
export const H_SEQ = "svc-seq";
export const H_EPOCH = "svc-epoch";
export const H_ASK = "svc-ask";
/** A coordinator's signature: its directory key (raw Ed25519, hex), the message's number in its run, the signature. */
export const H_KEY = "svc-key";
export const H_N = "svc-n";
export const H_SIG = "svc-sig";

/** The headers a coordinator's signature binds, as they ride on the message. */
export interface SignedHeaders {
  from: string;
  key: string;
  /** One counter over every message the sender publishes in this run (its id is new each run): never repeated. */
  n: number;
  seq?: string;
  ask?: string;
}

/**
 * What a coordinator signs of each message it publishes on NATS, under SIGNATURE_DOMAINS.fabric (`"svc-fabric/v1\0" ||
 * JCS(this)`): the subject, so a message cannot be moved to another gateway's subject or feed; the sender and its key;
 * the message's number, so a gateway that took a number on a subject drops it when it comes again (a replay); the
 * feed's number and what the message answers, so neither can be spoofed; and the body's SHA-256.
 */
export function signedPart(subject: string, h: SignedHeaders, body: Uint8Array) {
  return { subject, from: h.from, key: h.key, n: h.n, seq: h.seq ?? null, ask: h.ask ?? null, body_sha256: nodeSha256Hex(body) };
}

/** A coordinator's feed beats this often when quiet; a gateway forgets a coordinator silent for FEED_QUIET_MS. */
export const FEED_BEAT_MS = 1_000;
export const FEED_QUIET_MS = 6_000;
/** A gateway pings each coordinator this often; a coordinator drops a gateway silent for GATEWAY_QUIET_MS. */
export const PING_MS = 1_000;
export const GATEWAY_QUIET_MS = 6_000;

/** An id that is one subject token: no dots, spaces or wildcards. */
export const SUBJECT_TOKEN = /^[A-Za-z0-9_-]{1,128}$/;
