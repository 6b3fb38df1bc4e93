// DESIGN §11 at the gateway: a provider's rung, serial and keys are what its attestation evidence proves to this
// gateway, under its own release keys and roots, never what a directory message says, whatever carried the message
// (in-process, WebSocket or NATS). The coordinator names each provider's evidence by its digest; evidence not checked
// yet is fetched once from the coordinator holding the provider and checked with src/trust/attestation.ts (the check
// `svc-agent verify --attestation` runs), off the request path, a few at a time. Verdicts are kept per digest, so a
// provider is checked once per attestation, never per request; until its evidence has checked out it is not in the copy.
import { LRUCache } from "lru-cache";
import type { Logger } from "pino";
import { attestationRecord, type AttestationRecord } from "../../src/trust/attestation-record.ts";
import { checkEvidence, evidenceDigest, EvidenceSchema, type Evidence, type TrustAnchors } from "../../src/trust/attestation.ts";
import { verifySignatureNative } from "../../src/crypto/signing.ts";
import type { TrustLevel } from "../../src/receipt/rungs.ts";
import type { DirectoryEntry } from "../../src/wire/gateway.ts";
import type { DirectoryDelta } from "./directory-copy.ts";

/** What this gateway's check of one piece of evidence found. */
type Verdict =
  | { ok: true; rung: TrustLevel; serial?: string; providerId: string; signingKey: string; sealingKey: string; checkedAt: Date }
  | { ok: false; reason: string };
type Passed = Extract<Verdict, { ok: true }>;

/** Verdicts kept, least recently used out first: a few hundred bytes each. */
export const MAX_VERDICTS = 50_000;
/** Fetches and checks in flight at once; the rest wait their turn. */
export const MAX_CHECKING = 8;
/** A fetch that got no evidence (the coordinator did not answer) is tried again after this, while the entry stands. */
export const FETCH_RETRY_MS = 1_000;

export interface ProviderChecksOptions {
  /** This gateway's own release keys and attestation roots. */
  anchors: TrustAnchors;
  /** The evidence the coordinator holds for provider `id` (unknown: it is read with the evidence schema), null when none, undefined when it did not answer. */
  fetch(id: string): Promise<unknown>;
  /** Entries whose check has just finished, for the copy: put at what their evidence proves, or gone. */
  checked(put: DirectoryEntry[], gone: string[]): void;
  log: Logger;
  now?: () => Date;
}

export class ProviderChecks {
  private readonly verdicts = new LRUCache<string, Verdict>({ max: MAX_VERDICTS });
  /** The coordinator's latest entry for each provider it lists. */
  private readonly entries = new Map<string, DirectoryEntry>();
  /** The verdict each provider in the copy is listed under. */
  private readonly listed = new Map<string, Passed>();
  /** The digest last fetched (or being fetched) per provider, so each piece of evidence is fetched once. */
  private readonly asked = new Map<string, string>();
  /** Providers waiting for a fetch slot. */
  private readonly queue = new Set<string>();
  private checking = 0;
  /** Providers of the whole directory last sent whose first check is still to come: the copy is not ready before them. */
  private readonly first = new Set<string>();
  private inSnapshot = false;
  /** Bumped when the link resets, so a check begun before lands nowhere. */
  private generation = 0;

  constructor(private readonly options: ProviderChecksOptions) {}

  /** Whether every provider of the last whole directory has had its first check. */
  get settled(): boolean {
    return this.first.size === 0;
  }

  /** The coordinator's delta as the copy may take it: each entry at what its evidence proves here; unchecked ones wait. */
  vet(delta: DirectoryDelta): DirectoryDelta {
    if (delta.reset) {
      this.clear();
      this.inSnapshot = true;
    }
    const put: DirectoryEntry[] = [];
    const gone = [...delta.gone];
    for (const id of delta.gone) this.forget(id);
    for (const entry of delta.put) {
      this.entries.set(entry.id, entry);
      const verdict = this.verdicts.get(entry.evidence_sha256);
      if (verdict !== undefined) {
        const vetted = this.judged(entry, verdict);
        if (vetted) put.push(vetted);
        else gone.push(entry.id);
        continue;
      }
      // a re-attestation not checked yet: the provider stays as its last checked evidence has it until then
      const before = this.listed.get(entry.id);
      if (before) put.push(vetted(entry, before));
      else if (this.inSnapshot) this.first.add(entry.id);
      this.request(entry.id, entry.evidence_sha256);
    }
    if (!delta.more) this.inSnapshot = false;
    return { ...delta, put, gone };
  }

  /** The link is down: nothing is listed until the next whole directory (verdicts stay: evidence does not change). */
  clear(): void {
    this.generation++;
    this.entries.clear();
    this.listed.clear();
    this.asked.clear();
    this.queue.clear();
    this.first.clear();
    this.inSnapshot = false;
  }

  /**
   * The public record of provider `id` from evidence its coordinator just sent (`GET /v1/providers/{id}/attestation`):
   * the rung and serial this gateway's check proves, as of the instant it was checked; undefined when it proves nothing.
   */
  async record(id: string, raw: unknown): Promise<AttestationRecord | undefined> {
    const evidence = this.parse(id, raw);
    if (evidence === undefined) return undefined;
    const verdict = await this.verdictOf(id, evidence);
    if (!verdict.ok || verdict.providerId !== id) return undefined;
    return attestationRecord(id, evidence, { rung: verdict.rung, serial: verdict.serial }, verdict.checkedAt);
  }

  private forget(id: string): void {
    this.entries.delete(id);
    this.listed.delete(id);
    this.asked.delete(id);
    this.queue.delete(id);
    this.first.delete(id);
  }

  /** The entry at what `verdict` proves, or undefined (and no longer listed) when it proves nothing for this provider. */
  private judged(entry: DirectoryEntry, verdict: Verdict): DirectoryEntry | undefined {
    if (!verdict.ok || verdict.providerId !== entry.id) {
      this.listed.delete(entry.id);
      return undefined;
    }
    this.listed.set(entry.id, verdict);
    return vetted(entry, verdict);
  }

  private request(id: string, digest: string): void {
    if (this.asked.get(id) === digest) return;
    this.asked.set(id, digest);
    this.queue.add(id);
    this.pump();
  }

  private pump(): void {
    while (this.checking < MAX_CHECKING && this.queue.size > 0) {
      const id = this.queue.values().next().value!;
      this.queue.delete(id);
      this.checking++;
      void this.check(id, this.asked.get(id)!).finally(() => {
        this.checking--;
        this.pump();
      });
    }
  }

  /** Fetches provider `id`'s evidence (asked for under `digest`), checks it, and hands the copy what it proves. */
  private async check(id: string, digest: string): Promise<void> {
    const generation = this.generation;
    const raw = await this.options.fetch(id);
    if (generation !== this.generation || this.asked.get(id) !== digest) return;
    const evidence = raw === undefined || raw === null ? undefined : this.parse(id, raw);
    if (evidence === undefined) {
      // no answer, or none to give: the provider stays out (the copy need not wait for it); unanswered, it is
      // asked again while its entry stands
      this.first.delete(id);
      if (raw === undefined) setTimeout(() => this.retry(id, digest, generation), FETCH_RETRY_MS).unref();
      return;
    }
    const verdict = await this.verdictOf(id, evidence);
    if (generation !== this.generation) return;
    this.first.delete(id);
    const entry = this.entries.get(id);
    // the coordinator has moved on to newer evidence meanwhile: its entry for that asks again, or finds this verdict
    if (entry === undefined || entry.evidence_sha256 !== evidenceDigest(evidence)) return;
    if (verdict.ok && (verdict.rung !== entry.trust || verdict.serial !== entry.serial)) {
      this.options.log.warn(
        { provider: id, coordinator_says: entry.trust, proven: verdict.rung },
        `provider ${id}: its coordinator says rung ${entry.trust}, but its evidence proves ${verdict.rung} under this gateway's --release-keys and --attestation-roots; it is listed at ${verdict.rung} (give every gateway its coordinators' anchors)`,
      );
    }
    const put = this.judged(entry, verdict);
    if (put) this.options.log.info({ provider: id, rung: put.trust }, "provider's evidence checked");
    this.options.checked(put ? [put] : [], put ? [] : [id]);
  }

  private retry(id: string, digest: string, generation: number): void {
    if (generation !== this.generation || this.asked.get(id) !== digest || this.entries.get(id)?.evidence_sha256 !== digest) return;
    this.asked.delete(id);
    this.request(id, digest);
  }

  private parse(id: string, raw: unknown): Evidence | undefined {
    const parsed = EvidenceSchema.safeParse(raw);
    if (parsed.success) return parsed.data;
    this.options.log.warn({ provider: id }, `the coordinator sent evidence for provider ${id} that is not attestation evidence; it is not listed`);
    return undefined;
  }

  /** The verdict on `evidence`, checked once per digest. */
  private async verdictOf(id: string, evidence: Evidence): Promise<Verdict> {
    const digest = evidenceDigest(evidence);
    const known = this.verdicts.get(digest);
    if (known !== undefined) return known;
    const checkedAt = this.options.now?.() ?? new Date();
    // node's native Ed25519 for the signatures, as for receipts: the same verdicts, about 15 times faster
    const result = await checkEvidence(evidence, this.options.anchors, checkedAt, { signature: verifySignatureNative });
    const verdict: Verdict = result.ok
      ? { ok: true, rung: result.rung, ...(result.serial === undefined ? {} : { serial: result.serial }), providerId: result.providerId, signingKey: result.signingKey, sealingKey: result.sealingKey, checkedAt }
      : { ok: false, reason: result.reason };
    if (!verdict.ok) this.options.log.warn({ provider: id, why: verdict.reason }, `provider ${id}'s evidence does not verify here; it is not listed`);
    else if (verdict.providerId !== id) this.options.log.warn({ provider: id }, `the evidence sent for provider ${id} is another provider's (${verdict.providerId}); it is not listed`);
    this.verdicts.set(digest, verdict);
    return verdict;
  }
}

/** The coordinator's entry with the rung, serial and keys its evidence proves here: the load and aliases are the coordinator's. */
function vetted(entry: DirectoryEntry, verdict: Passed): DirectoryEntry {
  const { serial: _claimed, ...rest } = entry;
  return {
    ...rest,
    trust: verdict.rung,
    ...(verdict.serial === undefined ? {} : { serial: verdict.serial }),
    signing_key: verdict.signingKey,
    sealing_key: verdict.sealingKey,
  };
}
