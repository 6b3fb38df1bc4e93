// DESIGN §11 on NATS: a gateway takes a coordinator's message only when a directory key it trusts signed it, for
// this very subject and sender (src/wire/nats.ts signedPart), under a number higher than any it has taken from that
// sender on that subject. Unsigned, forged, re-addressed and replayed messages are dropped before they are read, and
// the check is cheap (a key lookup, a SHA-256 and one Ed25519 verification) so a flood of them costs little.
import { LRUCache } from "lru-cache";
import type { MsgHdrs } from "@nats-io/transport-node";
import { SIGNATURE_DOMAINS, verifySignatureNative } from "../../src/crypto/signing.ts";
import { H_ASK, H_FROM, H_KEY, H_N, H_SEQ, H_SIG, signedPart, SUBJECT_TOKEN } from "../../src/wire/nats.ts";

/** Senders whose last number is remembered per subject: coordinators' runs, each a fresh id. */
const REMEMBERED = 10_000;

export type Signed = { ok: true; from: string; seq?: string; ask?: string } | { ok: false; why: string };

export class CoordinatorSignatures {
  /** `${sender} ${subject}` → the highest number taken. */
  private readonly last = new LRUCache<string, number>({ max: REMEMBERED });

  constructor(private readonly trusted: (key: string) => boolean) {}

  /** The message's sender, feed number and ask when a trusted coordinator signed it and it is new here; else why not. */
  check(subject: string, h: MsgHdrs | undefined, body: Uint8Array): Signed {
    const [from, key, n, sig] = [h?.get(H_FROM) ?? "", h?.get(H_KEY) ?? "", Number(h?.get(H_N)), h?.get(H_SIG) ?? ""];
    if (key === "" || sig === "") return { ok: false, why: "unsigned" };
    if (!SUBJECT_TOKEN.test(from) || !Number.isSafeInteger(n) || n < 1) return { ok: false, why: "signed headers that are not well formed" };
    if (!this.trusted(key)) return { ok: false, why: `signed by ${key}, which is not in --coordinator-keys` };
    const seen = `${from} ${subject}`;
    if (n <= (this.last.get(seen) ?? 0)) return { ok: false, why: `a replay (number ${n} from ${from} on ${subject} was taken already)` };
    const seq = h?.get(H_SEQ) || undefined;
    const ask = h?.get(H_ASK) || undefined;
    if (!verifySignatureNative(key, SIGNATURE_DOMAINS.fabric, signedPart(subject, { from, key, n, seq, ask }, body), sig)) {
      return { ok: false, why: "a signature that does not verify" };
    }
    this.last.set(seen, n);
    return { ok: true, from, ...(seq === undefined ? {} : { seq }), ...(ask === undefined ? {} : { ask }) };
  }
}
