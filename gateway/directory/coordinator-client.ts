// The gateway's side of the coordinator (DESIGN §1): one reconnecting link that implements the Directory the
// routes use, with a copy of the directory the coordinator keeps current. A session is a series of attempts
// (session-attempt.ts), each choosing a provider from the copy, sealing the request to it and placing it there:
// a choice the coordinator finds stale is made again; an unpinned request whose provider left, or faulted, before
// its first token is re-routed to another (DESIGN §8), at most MAX_FAULT_REROUTES times for faults. The copy holds
// each provider at what its evidence proves to this gateway (provider-checks.ts), never at the coordinator's word.
import type { Logger } from "pino";
import type { AttestationRecord } from "../../src/trust/attestation-record.ts";
import type { TrustAnchors } from "../../src/trust/attestation.ts";
import { canonicalJson } from "../../src/receipt/canonical-json.ts";
import { ApiError } from "../../src/errors.ts";
import { Mailbox } from "./mailbox.ts";
import { sealRequest } from "../../src/crypto/seal.ts";
import { MAX_EXCLUDED, type DirectoryEntry, type FromGateway, type ListedProvider, type ToGateway } from "../../src/wire/gateway.ts";
import type { Fabric, FabricLink } from "../fabric/fabric.ts";
import { DirectoryCopy } from "./directory-copy.ts";
import { ProviderChecks } from "./provider-checks.ts";
import type { AdmissionRequest, BlindEvent, BlindRequest, Directory, SessionEvent, SessionRequest } from "./directory.ts";
import { blindAttempt, type BlindHost } from "./blind-attempt.ts";
import { DEFAULT_SESSION_DEADLINES, type SessionDeadlines } from "./deadlines.ts";
import type { LiveSession } from "./live-session.ts";
import { ProviderFaults, type Breach, type FaultKind, type FaultSubject } from "./provider-faults.ts";
import type { Disputed } from "../../src/session/provider-report.ts";
import { attempt, type AttemptHost, type Outcome, type Sealed } from "./session-attempt.ts";
import { HeldLedger, type HeldLimits } from "./held-bytes.ts";

const LIST_TIMEOUT_MS = 5_000;
/** Choices in a row the coordinator may find stale before the request gives up (each one follows a change). */
const MAX_STALE_CHOICES = 32;
/** Providers an unpinned request may move away from after they faulted before its first token. */
export const MAX_FAULT_REROUTES = 2;

export interface SessionPolicy {
  deadlines?: SessionDeadlines;
  /** Where providers' faults are counted and their rests kept. */
  faults?: ProviderFaults;
  /** Each fault charged, and each rest it began, for the metrics. */
  onFault?: (kind: FaultKind, rested: boolean) => void;
  /** What the gateway holds for sessions in flight: unread per session, and in all (default: DEFAULT_HELD_LIMITS). */
  held?: HeldLimits;
}

export class CoordinatorClient implements Directory, BlindHost {
  private readonly link: FabricLink;
  readonly url: string;
  private nextRid = 0;
  private readonly copy = new DirectoryCopy();
  /** Each open request's disputed validation errors, by request id, charged when another provider serves it. */
  private readonly disputes = new Map<string, ({ provider: string } & Disputed)[]>();
  /** What each provider's evidence proves here: the copy takes only what it passes. */
  private readonly checks: ProviderChecks;
  /** Waiting for the first whole directory of this link. */
  private readonly syncing = new Set<Mailbox<true>>();
  /** Evidence asked of the coordinator, by request id: what it sent (unknown until checked), or null. */
  private readonly attestations = new Map<number, Mailbox<unknown>>();
  readonly sessions = new Map<string, LiveSession>();
  readonly deadlines: SessionDeadlines;
  readonly faults: ProviderFaults;
  readonly held: HeldLedger;

  /** `anchors`: this gateway's own release keys and attestation roots, which every provider's evidence is checked under. */
  constructor(
    fabric: Fabric,
    readonly log: Logger,
    anchors: TrustAnchors,
    private readonly policy: SessionPolicy = {},
  ) {
    this.deadlines = policy.deadlines ?? DEFAULT_SESSION_DEADLINES;
    this.faults = policy.faults ?? new ProviderFaults();
    this.held = new HeldLedger(policy.held);
    this.checks = new ProviderChecks({
      anchors,
      log,
      fetch: (id) => this.evidenceOf(id).catch(() => undefined),
      checked: (put, gone) => {
        this.copy.update(put, gone);
        this.faults.listed({ put, gone });
        this.wake();
      },
    });
    const url = (this.url = fabric.where);
    this.link = fabric.connect(
      {
        open: () => this.log.info({ coordinator: url }, "connected to the coordinator"),
        message: (message) => this.dispatch(message),
        affinity: (key, provider) => this.copy.remember(key, provider),
        audit: () => this.auditHint(),
        closed: ({ error, wasOpen, retryMs }) => {
          this.copy.clear();
          this.checks.clear();
          this.faults.forgetProviders();
          for (const box of [...this.syncing, ...this.attestations.values(), ...[...this.sessions.values()].map((s) => s.box)]) box.fail(this.unreachable());
          if (error !== undefined) this.log.debug({ why: error }, "coordinator link error");
          if (error?.startsWith("the coordinator refused")) this.log.warn({ coordinator: url, why: error }, "the coordinator refused this gateway's link");
          if (retryMs === undefined) return;
          // one warning when a live link drops; the retries that follow are routine
          if (wasOpen) this.log.warn({ coordinator: url }, "coordinator link down; reconnecting");
          else this.log.debug({ coordinator: url, retry_ms: retryMs }, "coordinator unreachable; retrying");
        },
      },
    );
  }

  get connected(): boolean {
    return this.link.connected;
  }

  private dispatch(message: ToGateway | undefined): void {
    if (!message) return this.log.warn("the coordinator sent an invalid message");
    if (message.t === "directory") {
      // the faults' index lists what the copy lists: each provider as its evidence proves it here
      const vetted = this.checks.vet(message);
      this.copy.apply(vetted);
      this.faults.listed(vetted);
      this.wake();
    } else if (message.t === "attestation") this.attestations.get(message.rid)?.post(message.evidence);
    else this.sessions.get(message.id)?.arrive(message);
  }

  /** Wakes whoever waits for the whole directory once it is here and its providers have had their first check. */
  private wake(): void {
    // a mailbox hands over defined items only: each waiter is woken with `true`
    if (this.copy.ready && this.checks.settled) for (const box of this.syncing) box.post(true);
  }

  private send(message: FromGateway): void {
    if (!this.link.send(message)) throw this.unreachable();
  }

  /** SPEC §4.2's 502: what every request gets at once while the coordinator is down. */
  private unreachable(): ApiError {
    return new ApiError("directory_unavailable", `The coordinator at ${this.url} is unreachable; try again shortly.`);
  }

  async list(): Promise<ListedProvider[]> {
    await this.synced();
    return this.copy.list();
  }

  /**
   * Resolves once the copy holds the coordinator's whole directory: at once, but for a link that just opened,
   * which gets LIST_TIMEOUT_MS to send it (and `signal`, the caller's, may give up sooner).
   */
  private async synced(signal?: AbortSignal): Promise<void> {
    if (!this.link.connected) throw this.unreachable();
    if (this.copy.ready && this.checks.settled) return;
    const box = new Mailbox<true>();
    this.syncing.add(box);
    const timeout = AbortSignal.timeout(LIST_TIMEOUT_MS);
    try {
      await box.take(signal === undefined ? timeout : AbortSignal.any([signal, timeout]));
    } catch (err) {
      if (err instanceof ApiError || !timeout.aborted) throw err;
      // the whole directory is here and only some first checks are still running: answer from what is checked
      if (this.copy.ready) return;
      throw new ApiError("directory_unavailable", `The coordinator at ${this.url} did not send its directory in time; try again shortly.`);
    } finally {
      this.syncing.delete(box);
    }
  }

  async attestation(id: string): Promise<AttestationRecord | undefined> {
    const evidence = await this.evidenceOf(id);
    return evidence === null ? undefined : this.checks.record(id, evidence);
  }

  /** The evidence the coordinator holds for provider `id`, unread (null when it holds none). */
  private async evidenceOf(id: string): Promise<unknown> {
    const rid = this.nextRid++;
    const box = new Mailbox<unknown>();
    this.attestations.set(rid, box);
    try {
      this.send({ t: "attestation", rid, id });
      return await box.take(AbortSignal.timeout(LIST_TIMEOUT_MS));
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw new ApiError("directory_unavailable", `The coordinator at ${this.url} did not answer in time; try again shortly.`);
    } finally {
      this.attestations.delete(rid);
    }
  }

  open(request: SessionRequest, signal: AbortSignal): AsyncGenerator<SessionEvent, void, void> {
    return this.attempts(request, signal, attempt);
  }

  openBlind(request: BlindRequest, signal: AbortSignal): AsyncGenerator<BlindEvent, void, void> {
    return this.attempts(request, signal, blindAttempt);
  }

  /** A session as a series of attempts: each stale choice made again, a provider that left or faulted early left behind. */
  private async *attempts<R extends { requestId: string }, E>(
    request: R,
    signal: AbortSignal,
    attemptOne: (host: this, request: R, exclude: readonly string[], mayReroute: boolean, signal: AbortSignal) => AsyncGenerator<E, Outcome, void>,
  ): AsyncGenerator<E, void, void> {
    const exclude: string[] = [];
    let stale = 0;
    let reroutes = MAX_FAULT_REROUTES;
    /** The last provider fault re-routed away from: the caller's answer when no other provider is left to try. */
    let fault: ApiError | undefined;
    /** Validation errors providers claimed for this request, re-routed before the caller heard them. */
    const disputes: ({ provider: string } & Disputed)[] = [];
    this.disputes.set(request.requestId, disputes);
    try {
    for (;;) {
      let outcome: Outcome;
      try {
        outcome = yield* attemptOne(this, request, exclude, reroutes > 0, signal);
      } catch (err) {
        // no other provider to ask: a claimed validation error stands (as the one provider of a model says it),
        // else the last fault
        if (err instanceof ApiError && err.code === "provider_unavailable") throw disputes[0]?.error ?? fault ?? err;
        throw err;
      }
      if (outcome.done) return;
      if ("stale" in outcome) {
        if (++stale < MAX_STALE_CHOICES) continue;
        throw new ApiError("overloaded", `The directory changed under each of ${stale} choices of provider for this request; retry it.`, { retryAfterS: 1 });
      }
      // re-route: an unpinned request whose provider left, faulted or claimed it invalid before starting goes to another machine
      if (outcome.fault !== undefined) {
        reroutes--;
        fault = outcome.fault;
      }
      if (outcome.disputed !== undefined) {
        reroutes--;
        disputes.push({ provider: outcome.leftBy, ...outcome.disputed });
      }
      exclude.push(outcome.leftBy);
    }
    } finally {
      this.disputes.delete(request.requestId);
    }
  }

  /** Another provider served the request: each validation error claimed for it before was false, and is charged. */
  served(requestId: string): void {
    for (const { provider, error, chargeable } of this.disputes.get(requestId) ?? []) {
      if (chargeable) this.charge(this.faults.subjectOf(provider), { kind: "error", why: `claimed the request ${error.code === "invalid_value" ? "held an invalid value" : "asked for something unsupported"}, and another provider served it` }, requestId);
    }
  }

  settle(id: string): void {
    this.copy.settle(id);
  }

  cancel(id: string): void {
    this.link.send({ t: "cancel", id });
  }

  /** Counts a provider's fault against its enrollment; the one that sends it to rest says so once, in the log and the metrics. */
  charge(provider: FaultSubject, { kind, why }: Breach, requestId: string): void {
    const faults = this.faults.charge(provider, Date.now());
    const { id, enrollment } = provider;
    this.log.warn({ provider: id, enrollment, request_id: requestId, fault: kind, why }, `provider ${id} fault: it ${why}`);
    if (faults !== undefined) {
      const restS = Math.round(this.faults.policy.restMs / 1000);
      // and with it every other key its enrollment connects with
      this.log.warn({ provider: id, enrollment, faults, rest_s: restS }, `provider ${id} rests out of rotation for ${restS} s after ${faults} faults`);
    }
    this.policy.onFault?.(kind, faults !== undefined);
  }

  admit(request: AdmissionRequest): void {
    // with no current copy there is nothing to read: the request meets the coordinator's own answer in turn
    if (!this.link.connected || !this.copy.ready) return;
    const { entry, floor, pin, only } = request;
    this.skipping(request, [], (skip) => this.copy.admit({ alias: entry.alias, floor, pin, ...(only === undefined ? {} : { only }) }, skip));
  }

  /**
   * Runs `choose` with the providers resting after repeated faults skipped beside `exclude` (an unpinned request
   * only: a pin names its machine whatever it did), or, with nothing else eligible, without them: a resting
   * provider still serves rather than no one. A provider barred by a failed audit is always skipped, and a pin to
   * one is refused, naming the audit. Returns what was skipped.
   */
  private skipping(request: AdmissionRequest, exclude: readonly string[], choose: (skip: readonly string[]) => void): readonly string[] {
    const barred = this.faults.barred();
    const { pin } = request;
    for (const [id, audit] of pin === undefined ? [] : barred) {
      if (id.startsWith(pin!)) throw new ApiError("provider_unavailable", `Provider ${id} is out of rotation: it failed audit ${audit} of the weights it serves; send the request without a pin.`);
    }
    const always = [...exclude, ...[...barred.keys()].filter((p) => !exclude.includes(p))].slice(0, MAX_EXCLUDED);
    const resting = pin === undefined ? this.faults.resting(Date.now()).filter((p) => !always.includes(p)) : [];
    const skip = [...always, ...resting].slice(0, MAX_EXCLUDED);
    try {
      choose(skip);
      return skip;
    } catch (err) {
      if (resting.length === 0 || !(err instanceof ApiError) || err.code !== "provider_unavailable") throw err;
      choose(always);
      return always;
    }
  }

  /** Called when another gateway says it concluded an audit (NATS): the store is to be read now. */
  auditHint: () => void = () => undefined;

  /** Tells the other gateways this one concluded audit `id` (a hint: each reads the store itself). */
  shareAudit(id: string): void {
    this.link.shareAudit?.(id);
  }

  /** The failed audit that bars provider `id`, if any. */
  barOf(id: string): string | undefined {
    return this.faults.barOf(id);
  }

  /** Takes provider `id` out of rotation for the failed audit `auditId` (gateway/audit/), charged as faults are. */
  bar(id: string, auditId: string): void {
    const subject = this.faults.subjectOf(id);
    this.faults.bar(subject, auditId);
    this.log.warn({ provider: id, enrollment: subject.enrollment, audit: auditId }, `provider ${id} is out of rotation: it failed audit ${auditId}`);
  }

  /** Chooses a provider from the copy, seals the request to its attested key and places it there in one message. */
  async place(id: string, request: SessionRequest, exclude: readonly string[], maxBytes: number, signal: AbortSignal): Promise<{ provider: DirectoryEntry; sealed: Sealed }> {
    await this.synced(signal);
    const routing = performance.now();
    const { alias } = request.entry;
    let provider!: DirectoryEntry;
    exclude = this.skipping(request, exclude, (skip) => (provider = this.copy.choose(id, { alias, floor: request.floor, pin: request.pin, affinity: request.affinity }, skip)));
    // what the copy now remembers for the conversation, the other gateways learn too (a pin is not remembered)
    if (request.affinity !== undefined && request.pin === undefined) this.link.shareAffinity?.(request.affinity, provider.id);
    const sealing = performance.now();
    request.timing?.add("route", sealing - routing);
    const bytes = Buffer.from(canonicalJson(request.body));
    // the coordinator sees only ciphertext, and the choice it was made for, to check it still holds
    const { sealed, frames } = await sealRequest(provider.sealing_key, id, bytes);
    this.send({
      t: "place", id, provider: provider.id, alias, floor: request.floor, ...(request.pin === undefined ? {} : { pin: request.pin }),
      exclude: [...exclude], ...sealed, ...(request.whole ? { whole: true } : {}), max_bytes: maxBytes,
    });
    request.timing?.add("seal", performance.now() - sealing);
    return { provider, sealed: { bytes, frames } };
  }

  /** Chooses among a gateway-blind request's candidates from the copy and places its envelope there, unopened. */
  async placeBlind(id: string, request: BlindRequest, exclude: readonly string[], maxBytes: number, signal: AbortSignal): Promise<DirectoryEntry> {
    await this.synced(signal);
    const routing = performance.now();
    const { entry, floor, envelope, affinity, cache } = request;
    const only = envelope.candidates.map((c) => c.provider);
    let provider!: DirectoryEntry;
    exclude = this.skipping({ entry, floor }, exclude, (skip) => (provider = this.copy.choose(id, { alias: entry.alias, floor, only, affinity }, skip)));
    if (affinity !== undefined) this.link.shareAffinity?.(affinity, provider.id);
    request.timing?.add("route", performance.now() - routing);
    // the coordinator checks the choice holds among the candidates, and relays the envelope as it came
    this.send({
      t: "place", id, provider: provider.id, alias: entry.alias, floor, exclude: [...exclude], candidates: only,
      blind: envelope, ...(cache === undefined ? {} : { cache }), max_bytes: maxBytes,
    });
    return provider;
  }

  close(): Promise<void> {
    return this.link.close();
  }
}
