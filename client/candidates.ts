// Which providers a gateway-blind request is sealed to (DESIGN §10), by the caller's own policy, never the gateway's:
// the listing's providers that serve the alias, each one's evidence checked with the same code as `svc-agent verify
// --attestation` under the caller's roots and release keys (the check cached by the evidence's digest, so only a new
// or changed provider costs one), taken when its proven rung is the one listed and at or above the floor, and its
// keys agree with those the caller knew; up to three in the gateway's order (src/routing/choose.ts), or the one a pin
// names.
import { MAX_CANDIDATES } from "../src/blind/format.ts";
import { ApiError } from "../src/errors.ts";
import { atOrAbove, TRUST_LEVELS, type TrustLevel } from "../src/receipt/rungs.ts";
import { chooseCandidates } from "../src/routing/choose.ts";
import type { ProvenProvider } from "../src/session/answer-reader.ts";
import { AttestationRecordSchema } from "../src/trust/attestation-record.ts";
import { checkEvidence, evidenceDigest, type EvidenceVerdict, type TrustAnchors } from "../src/trust/attestation.ts";
import * as z from "zod";

export interface TrustPolicy extends TrustAnchors {
  /** The lowest rung a candidate's evidence must prove to the caller (default process). */
  floor: TrustLevel;
  /** Provider id → Ed25519 signing key (hex) the caller knew: a provider presenting another key is refused. */
  knownKeys: ReadonlyMap<string, string>;
}

/** A candidate as the caller's own check of its evidence proved it. */
export interface Candidate extends ProvenProvider {
  /** Its attested X25519 sealing key, raw. */
  sealingKey: Uint8Array;
}

const ListingSchema = z.array(
  z.object({ id: z.string(), model_ids: z.array(z.string()), trust: z.enum(TRUST_LEVELS), busy: z.boolean(), waiting: z.number() }),
);

type Get = (path: string) => Promise<Response>;
const LOWEST_RUNG = TRUST_LEVELS[0];

export class CandidateChooser {
  /** Each provider's last evidence check, by the evidence's digest. */
  private readonly checked = new Map<string, { digest: string; verdict: EvidenceVerdict }>();

  /** `check`: the evidence check (a test counts its calls). */
  constructor(
    private readonly policy: TrustPolicy,
    private readonly check_: typeof checkEvidence = checkEvidence,
  ) {}

  /** Up to three candidates for `alias` (one, for a pin); throws an Error naming why none passed. */
  async choose(get: Get, alias: string, pin: string | undefined): Promise<Candidate[]> {
    const listing = ListingSchema.safeParse(await (await okOrAnswer(get("/providers"))).json().catch(() => undefined));
    if (!listing.success) throw unavailable("the gateway's provider listing is not a list of providers");
    // in the gateway's own order, over what the listing says (its rungs are only claims: each is checked below, and
    // the floor is the evidence's to meet, so every listed rung is taken here); one refused, the next in that order
    const listed = listing.data.map((p) => ({ ...p, lastAssigned: 0 }));
    const want = pin === undefined ? MAX_CANDIDATES : 1;
    const chosen: Candidate[] = [];
    const refused: string[] = [];
    const tried = new Set<string>();
    while (chosen.length < want) {
      let next: typeof listed;
      try {
        next = chooseCandidates(listed, { alias, floor: LOWEST_RUNG, ...(pin === undefined ? {} : { pin }) }, want - chosen.length, tried);
      } catch (err) {
        if (tried.size > 0 || !(err instanceof ApiError)) break;
        const why = err.code === "provider_unavailable" ? `the gateway lists no provider of ${alias}${pin === undefined ? "" : ` matching the pin ${pin}`}` : err.message;
        throw unavailable(why);
      }
      for (const listedOne of next) {
        tried.add(listedOne.id);
        const outcome = await this.check(get, listedOne.id, listedOne.trust);
        if (typeof outcome === "string") refused.push(`${listedOne.id.slice(0, 12)}: ${outcome}`);
        else chosen.push(outcome);
      }
      if (pin !== undefined) break;
    }
    if (chosen.length > 0) return chosen;
    throw unavailable(`no provider of ${alias} passed the caller's checks (${refused.join("; ")})`);
  }

  /** The provider as its evidence proves it to the caller, or why it is refused. */
  private async check(get: Get, id: string, listedTrust: string): Promise<Candidate | string> {
    const res = await get(`/providers/${id}/attestation`);
    if (!res.ok) return `its attestation record could not be fetched (HTTP ${res.status})`;
    const record = AttestationRecordSchema.safeParse(await res.json().catch(() => undefined));
    if (!record.success) return "its attestation record is malformed";
    const { evidence, verified_at } = record.data;
    const digest = evidenceDigest(evidence);
    let verdict = this.checked.get(id)?.digest === digest ? this.checked.get(id)!.verdict : undefined;
    if (verdict === undefined) {
      verdict = await this.check_(evidence, { roots: this.policy.roots, releaseKeys: this.policy.releaseKeys }, new Date(verified_at));
      this.checked.set(id, { digest, verdict });
    }
    if (!verdict.ok) return `its evidence does not verify (${verdict.reason})`;
    if (verdict.providerId !== id) return "its evidence is another provider's";
    // a listing that claims more (or less) than the evidence proves to the caller is not believed: such a provider's receipts would not check
    if (verdict.rung !== listedTrust) return `listed at ${listedTrust}, but its evidence proves ${verdict.rung}${verdict.refusals.length > 0 ? ` (${verdict.refusals.join("; ")})` : ""}`;
    if (!atOrAbove(verdict.rung, this.policy.floor)) return `its evidence proves ${verdict.rung}, below the floor ${this.policy.floor}`;
    const known = this.policy.knownKeys.get(id);
    if (known !== undefined && known !== verdict.signingKey) return "its signing key is not the one the caller knew";
    return {
      id, signing_key: verdict.signingKey, trust: verdict.rung, ...(verdict.serial === undefined ? {} : { serial: verdict.serial }),
      sealingKey: hexBytes(verdict.sealingKey),
    };
  }
}

function hexBytes(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** No candidate: 503 provider_unavailable, as the gateway answers when it has none, naming why. */
const unavailable = (why: string) => new ApiError("provider_unavailable", `svc sealed fetch: ${why}; nothing was sent`);

/** The gateway's own refusal of the listing (a bad key, a rate limit), which the SDK gets as it came. */
export class GatewayAnswered extends Error {
  constructor(readonly response: Response) {
    super(`the gateway answered HTTP ${response.status}`);
  }
}

async function okOrAnswer(response: Promise<Response>): Promise<Response> {
  const res = await response;
  if (!res.ok) throw new GatewayAnswered(res);
  return res;
}
