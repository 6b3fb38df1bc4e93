// Which providers a gateway-blind request is sealed to (DESIGN §10), by the caller's own policy, never the gateway's:
// the listing's providers that serve the alias, each one's evidence checked with the same code as `svc-agent verify
// --attestation` under the caller's roots and release keys, taken when its proven rung is the one listed and at or
// above the floor, and its keys agree with those the caller knew; up to three in the gateway's order
// (src/routing/choose.ts), or the one a pin names. The listing names each provider's evidence by its digest, so
// evidence is fetched (and checked) only when new or changed, and the listing itself is kept a moment: a request
// then costs the gateway its one POST. A lying digest only makes the caller fetch again: what it checks is the bytes.
import { MAX_CANDIDATES } from "../src/blind/format.ts";
import { ApiError } from "../src/errors.ts";
import { atOrAbove, TRUST_LEVELS, type TrustLevel } from "../src/receipt/rungs.ts";
import { chooseCandidates } from "../src/routing/choose.ts";
import type { ProvenProvider } from "../src/session/answer-reader.ts";
import { Hex32 } from "../src/receipt/hex.ts";
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
  z.object({
    id: z.string(), model_ids: z.array(z.string()), trust: z.enum(TRUST_LEVELS), busy: z.boolean(), waiting: z.number(),
    // absent from a gateway older than the digest: its evidence is then fetched on every request, as before
    evidence_sha256: Hex32.optional(),
    // false on an auditing gateway once a failed audit barred the provider (issue 43): it would refuse to place there
    in_rotation: z.boolean().optional(),
  }),
);
type Listed = z.infer<typeof ListingSchema>[number] & { lastAssigned: number };

type Get = (path: string) => Promise<Response>;
const LOWEST_RUNG = TRUST_LEVELS[0];
/** How long a listing is kept by default: a second or two, as OpenPCC's client keeps its node list. */
export const LISTING_MAX_AGE_MS = 2_000;

export interface ChooserOptions {
  /** How long a fetched listing is reused (ms); 0 fetches it for every request. */
  listingMaxAgeMs?: number;
  /** The evidence check (a test counts its calls). */
  check?: typeof checkEvidence;
  now?: () => number;
}

export class CandidateChooser {
  /** Each provider's last evidence check, by the evidence's digest. */
  private readonly checked = new Map<string, { digest: string; verdict: EvidenceVerdict }>();
  private listing?: { at: number; providers: Listed[] };
  private readonly check_: typeof checkEvidence;
  private readonly maxAgeMs: number;
  private readonly now: () => number;

  constructor(
    private readonly policy: TrustPolicy,
    options: ChooserOptions = {},
  ) {
    this.check_ = options.check ?? checkEvidence;
    this.maxAgeMs = options.listingMaxAgeMs ?? LISTING_MAX_AGE_MS;
    this.now = options.now ?? Date.now;
  }

  /** A candidate failed (the gateway could not place the request, or its answer did not check): the next request lists afresh. */
  forgetListing(): void {
    this.listing = undefined;
  }

  /** Up to three candidates for `alias` (one, for a pin); throws an Error naming why none passed. */
  async choose(get: Get, alias: string, pin: string | undefined): Promise<Candidate[]> {
    const kept = this.listing !== undefined && this.now() - this.listing.at < this.maxAgeMs ? this.listing.providers : undefined;
    if (kept !== undefined) {
      // a kept listing that yields no one may only be out of date: once more, from a fresh one
      try {
        return await this.chooseFrom(kept, get, alias, pin);
      } catch {
        this.forgetListing();
      }
    }
    const listing = ListingSchema.safeParse(await (await okOrAnswer(get("/providers"))).json().catch(() => undefined));
    if (!listing.success) throw unavailable("the gateway's provider listing is not a list of providers");
    const providers = listing.data.map((p) => ({ ...p, lastAssigned: 0 }));
    if (this.maxAgeMs > 0) this.listing = { at: this.now(), providers };
    return this.chooseFrom(providers, get, alias, pin);
  }

  private async chooseFrom(listed: Listed[], get: Get, alias: string, pin: string | undefined): Promise<Candidate[]> {
    // in the gateway's own order, over what the listing says (its rungs are only claims: each is checked below, and
    // the floor is the evidence's to meet, so every listed rung is taken here); one refused, the next in that order
    const want = pin === undefined ? MAX_CANDIDATES : 1;
    // a barred provider is no candidate: the gateway places nothing there, so choosing it would only waste a seat (a
    // pin to one is left to the gateway, whose refusal names the audit)
    if (pin === undefined) listed = listed.filter((p) => p.in_rotation !== false);
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
        const outcome = await this.check(get, listedOne);
        if (typeof outcome === "string") refused.push(`${listedOne.id.slice(0, 12)}: ${outcome}`);
        else chosen.push(outcome);
      }
      if (pin !== undefined) break;
    }
    if (chosen.length > 0) return chosen;
    throw unavailable(`no provider of ${alias} passed the caller's checks (${refused.join("; ")})`);
  }

  /** The provider as its evidence proves it to the caller, or why it is refused. */
  private async check(get: Get, { id, trust: listedTrust, evidence_sha256: listedDigest }: Listed): Promise<Candidate | string> {
    const known = this.checked.get(id);
    // the evidence the listing names was checked before: nothing to fetch (a digest the gateway made up names none)
    const verdict = listedDigest !== undefined && known?.digest === listedDigest ? known.verdict : await this.fetchAndCheck(get, id, listedDigest);
    if (typeof verdict === "string") {
      this.forgetListing();
      return verdict;
    }
    if (!verdict.ok) return `its evidence does not verify (${verdict.reason})`;
    if (verdict.providerId !== id) return "its evidence is another provider's";
    // a listing that claims more (or less) than the evidence proves to the caller is not believed: such a provider's receipts would not check
    if (verdict.rung !== listedTrust) return `listed at ${listedTrust}, but its evidence proves ${verdict.rung}${verdict.refusals.length > 0 ? ` (${verdict.refusals.join("; ")})` : ""}`;
    if (!atOrAbove(verdict.rung, this.policy.floor)) return `its evidence proves ${verdict.rung}, below the floor ${this.policy.floor}`;
    const knownKey = this.policy.knownKeys.get(id);
    if (knownKey !== undefined && knownKey !== verdict.signingKey) return "its signing key is not the one the caller knew";
    return {
      id, signing_key: verdict.signingKey, trust: verdict.rung, ...(verdict.serial === undefined ? {} : { serial: verdict.serial }),
      sealingKey: hexBytes(verdict.sealingKey),
    };
  }

  /** Fetches provider `id`'s evidence and checks it (once per digest), or says why it could not be used. */
  private async fetchAndCheck(get: Get, id: string, listedDigest: string | undefined): Promise<EvidenceVerdict | string> {
    const res = await get(`/providers/${id}/attestation`);
    if (!res.ok) return `its attestation record could not be fetched (HTTP ${res.status})`;
    const record = AttestationRecordSchema.safeParse(await res.json().catch(() => undefined));
    if (!record.success) return "its attestation record is malformed";
    const { evidence, verified_at } = record.data;
    const digest = evidenceDigest(evidence);
    if (listedDigest !== undefined && digest !== listedDigest) return "its evidence is not the one the listing names (changed since, or a digest that names nothing)";
    const known = this.checked.get(id);
    if (known?.digest === digest) return known.verdict;
    const verdict = await this.check_(evidence, { roots: this.policy.roots, releaseKeys: this.policy.releaseKeys }, new Date(verified_at));
    this.checked.set(id, { digest, verdict });
    return verdict;
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
