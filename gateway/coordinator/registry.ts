// The coordinator's directory (DESIGN §1): live providers, one session at a time each with a FIFO queue in
// front, and the relay of sealed bytes between a session's gateway and its provider. Gateways choose from their
// copies (fed by `feed`); a placement is taken only while the choice still holds here, where every gateway's
// placements meet. Queues have a cap and a longest wait. Pure bookkeeping: the links hand it messages and ports
// to send on, so a unit test needs no socket.
import { ApiError } from "../../src/errors.ts";
import { ProviderIndex, route } from "../routing/provider-index.ts";
import { atOrAbove, type TrustLevel } from "../../src/receipt/rungs.ts";
import { MAX_SESSION_WIRE_BYTES, toWireError, type DirectoryEntry, type FromGateway, type ProviderEntry, type ToGateway } from "../../src/wire/gateway.ts";
import { DirectoryFeed } from "./directory-feed.ts";
import { load, retryAfterOf, routable, toDirectoryEntry, toEntry, type AgentPort, type GatewayPort, type Provider, type ProviderInfo, type Session, type Sealed } from "./provider-state.ts";
import { DEFAULT_QUEUE_LIMITS, type QueueLimits } from "./queue-limits.ts";

export { DEFAULT_QUEUE_LIMITS, type QueueLimits } from "./queue-limits.ts";
export type { AgentPort, GatewayPort, ProviderInfo } from "./provider-state.ts";

type Place = Extract<FromGateway, { t: "place" }>;

export class Registry {
  private readonly providers = new Map<string, Provider>();
  /** The providers that take sessions (not leaving), ordered for routing per alias and rung. */
  private readonly index = new ProviderIndex<Provider>();
  private readonly sessions = new Map<string, { session: Session; provider: Provider }>();
  /** Which provider holds each enrollment now: one at a time (admission.ts). */
  private readonly enrolled = new Map<string, string>();
  /** Sessions queued per alias, over all providers. */
  private readonly queuedByAlias = new Map<string, number>();
  private readonly limits: QueueLimits;
  /** What the gateways' copies of the directory learn, as it changes. */
  readonly feed: DirectoryFeed;
  /** Running totals for the coordinator's metrics. */
  readonly totals = { sessionsStarted: 0, framesRelayed: 0, staleChoices: 0, overloaded: 0 };

  constructor(
    private readonly knownAliases: ReadonlySet<string>,
    limits: Partial<QueueLimits> = {},
  ) {
    this.limits = { ...DEFAULT_QUEUE_LIMITS, ...limits };
    this.feed = new DirectoryFeed(
      (id) => this.entryOf(id),
      () => [...this.providers.values()].filter((p) => !p.leaving).map(toDirectoryEntry),
      { per_provider: this.limits.queuePerProvider },
    );
  }

  /** A freshly granted provider; one already connected under the same id is replaced (its sessions end, its link closes). */
  add(info: ProviderInfo, agent: AgentPort): void {
    this.evict(info.id, "the provider reconnected", "a newer connection presented the same keys");
    const provider: Provider = { ...info, agent, model_ids: [], lastAssigned: 0, queue: [], leaving: false, startedAt: 0 };
    this.providers.set(info.id, provider);
    if (info.enrollment !== undefined) this.enrolled.set(info.enrollment, info.id);
    this.index.put(provider, 0);
    this.feed.touch(info.id);
  }

  /** The provider connected under enrollment `ref` now, if any. */
  holderOf(ref: string): string | undefined {
    return this.enrolled.get(ref);
  }

  /** Provider `id` leaves (`reason`, to its gateways) and its link is closed (`why`, to its agent). */
  evict(id: string, reason: string, why: string): void {
    const previous = this.providers.get(id)?.agent;
    this.remove(id, reason);
    previous?.close(why);
  }

  /** A re-answered challenge: the rung is what the latest evidence (`evidence`, its digest) earned. */
  setTrust(id: string, trust: TrustLevel, serial: string | undefined, evidence: string): void {
    const provider = this.providers.get(id);
    if (!provider) return;
    Object.assign(provider, { trust, serial, evidence });
    if (!provider.leaving) this.index.put(provider, load(provider));
    this.feed.touch(id);
  }

  /** Keeps the catalog's aliases among those advertised; returns the ones it dropped. */
  advertise(id: string, aliases: readonly string[]): string[] {
    const provider = this.providers.get(id);
    if (!provider) return [];
    provider.model_ids = [...new Set(aliases.filter((a) => this.knownAliases.has(a)))];
    if (!provider.leaving) this.index.put(provider, load(provider));
    this.feed.touch(id);
    return aliases.filter((a) => !this.knownAliases.has(a));
  }

  /**
   * The provider left: its running session fails, its queue goes back to the gateways to re-route. With
   * `agent`, only if that link is still the one registered (an old link closing must not remove its successor).
   */
  remove(id: string, reason: string, agent?: AgentPort): void {
    const provider = this.providers.get(id);
    if (!provider || (agent !== undefined && provider.agent !== agent)) return;
    this.providers.delete(id);
    if (provider.enrollment !== undefined && this.enrolled.get(provider.enrollment) === id) this.enrolled.delete(provider.enrollment);
    this.index.delete(id);
    this.feed.touch(id);
    // a running session of which the gateway has seen nothing may still go elsewhere: an idle agent that vanished
    // is found out only once it is given work and stays silent (src/link/heartbeat.ts), and its caller should not pay for that
    const active = provider.active;
    if (active) this.finish(active, { t: "gone", id: active.id, started: active.relayed === true, reason });
    for (const session of [...provider.queue]) this.finish(session, { t: "gone", id: session.id, started: false, reason });
  }

  /** The agent is shutting down: it leaves the listing and routing now, and its queue goes elsewhere. */
  leave(id: string): void {
    const provider = this.providers.get(id);
    if (!provider || provider.leaving) return;
    provider.leaving = true;
    this.index.delete(id);
    this.feed.touch(id);
    for (const session of [...provider.queue]) this.finish(session, { t: "gone", id: session.id, started: false, reason: "the provider is leaving" });
  }

  /** Providers that take sessions (connected, granted, not leaving), for listings: O(n), never per request. */
  entries(): ProviderEntry[] {
    return [...this.providers.values()].filter((p) => !p.leaving).map(toEntry);
  }

  /** A provider as the gateways' copies see it; undefined once it takes no sessions. */
  private entryOf(id: string): DirectoryEntry | undefined {
    const provider = this.providers.get(id);
    return provider && !provider.leaving ? toDirectoryEntry(provider) : undefined;
  }

  /**
   * A sealed request on the provider its gateway chose: queued there (and started when the provider is free)
   * while the choice still holds, or "stale" when the directory moved on (the gateway chooses again). Throws
   * what a pinned request gets for a provider that cannot serve it, and 503 overloaded for a full queue.
   */
  place(gateway: GatewayPort, message: Place): "placed" | "stale" {
    if (this.sessions.has(message.id)) throw new ApiError("invalid_value", `Session id ${message.id} is already in use.`);
    const provider = this.holds(message);
    if (!provider) {
      this.totals.staleChoices++;
      return "stale";
    }
    this.admit(provider, message.alias);
    const sealed: Sealed =
      "blind" in message ? { blind: message.blind, ...(message.cache === undefined ? {} : { cache: message.cache }) } : { enc: message.enc, ct: message.ct, ...(message.whole ? { whole: true } : {}) };
    const maxBytes = Math.min(message.max_bytes ?? MAX_SESSION_WIRE_BYTES, MAX_SESSION_WIRE_BYTES);
    const session: Session = { id: message.id, alias: message.alias, gateway, sealed, maxBytes, relayedBytes: 0 };
    provider.lastAssigned = Date.now();
    this.enqueue(provider, session);
    this.sessions.set(session.id, { session, provider });
    const why = `it waited ${Math.round(this.limits.queuedMs / 1000)} s in the queue`;
    session.deadline = setTimeout(() => this.expire(session.id, why), this.limits.queuedMs).unref();
    this.pump(provider);
    return "placed";
  }

  /**
   * The chosen provider, if routing here would still allow it (SPEC §4.1): the one a pin names, or one that
   * serves the alias at or above the floor with no other less loaded; among equally loaded ones any will do.
   */
  private holds(message: Place): Provider | undefined {
    if (message.pin !== undefined) {
      const pinned = route(this.index, message, [], routable);
      return pinned.id === message.provider ? pinned : undefined;
    }
    const chosen = this.providers.get(message.provider);
    const { alias, floor, exclude, candidates } = message;
    const eligible = (p: Provider | undefined): p is Provider =>
      p !== undefined && !p.leaving && p.model_ids.includes(alias) && atOrAbove(p.trust, floor) && !exclude.includes(p.id) && (candidates === undefined || candidates.includes(p.id));
    if (!eligible(chosen)) return undefined;
    // a gateway-blind request goes only where it was sealed to: the least loaded of its candidates
    const best = candidates === undefined ? this.index.choose(alias, floor, exclude.length === 0 ? undefined : new Set(exclude)) : candidates.map((id) => this.providers.get(id)).filter(eligible).reduce((a, b) => (load(b) < load(a) ? b : a));
    return best && load(best) < load(chosen) ? undefined : chosen;
  }

  /** Throws 503 overloaded when the chosen provider's queue, or the alias's, is full. */
  private admit(provider: Provider, alias: string): void {
    const full =
      provider.queue.length >= this.limits.queuePerProvider
        ? `provider ${provider.id} already has ${provider.queue.length} requests waiting`
        : (this.queuedByAlias.get(alias) ?? 0) >= this.limits.queuePerAlias
          ? `${this.queuedByAlias.get(alias)} requests are already waiting for ${alias}`
          : undefined;
    if (full === undefined) return;
    this.totals.overloaded++;
    throw new ApiError("overloaded", `The service is at capacity: ${full}; retry after the Retry-After interval.`, {
      retryAfterS: retryAfterOf(provider),
    });
  }

  /** A session that overstayed its wait leaves the queue with 503 overloaded. */
  private expire(id: string, why: string): void {
    const found = this.sessions.get(id);
    if (!found || found.provider.active === found.session) return;
    const { session, provider } = found;
    this.totals.overloaded++;
    const error = new ApiError("overloaded", `The request was dropped from provider ${provider.id}'s queue: ${why}; retry it.`, { retryAfterS: retryAfterOf(provider) });
    this.finish(session, { t: "rejected", id, error: toWireError(error) });
    this.pump(provider);
  }

  /** The caller hung up: a queued session leaves the line at once; a running one is stopped on the agent. */
  cancel(gateway: GatewayPort, id: string): void {
    const found = this.sessions.get(id);
    if (!found || found.session.gateway !== gateway) return;
    const { session, provider } = found;
    if (provider.active === session) {
      // busy stays true until the agent confirms it has stopped
      provider.agent.send({ t: "cancel", id });
      return;
    }
    this.dequeue(provider, session);
    this.forget(session);
    this.pump(provider);
  }

  /** A gateway went away: all its sessions are cancelled. */
  dropGateway(gateway: GatewayPort): void {
    for (const { session } of [...this.sessions.values()]) if (session.gateway === gateway) this.cancel(gateway, session.id);
  }

  /**
   * A sealed frame from a provider, relayed as-is to the gateway of the session it is running, within the
   * session's byte bound: the frame that crosses it still goes (the gateway finds the breach and charges it), then
   * the provider is stopped and anything more it sends is dropped, so a slow gateway link never piles up more.
   */
  frame(providerId: string, id: string, data: string, clear: Omit<Extract<ToGateway, { t: "frame" }>, "t" | "id" | "data"> = {}): void {
    const provider = this.providers.get(providerId);
    const active = provider?.active;
    if (!provider || active?.id !== id || active.relayedBytes > active.maxBytes) return;
    active.relayedBytes += data.length;
    this.totals.framesRelayed++;
    active.relayed = true;
    // a gateway-blind session's last frame comes with its receipt or error code in the clear, for its gateway
    active.gateway.send({ t: "frame", id, data, ...clear });
    // busy stays true until the agent confirms it has stopped
    if (active.relayedBytes > active.maxBytes) provider.agent.send({ t: "cancel", id });
  }

  /** The agent is free: the gateway learns the session ended, the next in line starts. */
  end(providerId: string, id: string, error: string | undefined, code?: string): void {
    const provider = this.providers.get(providerId);
    const active = provider?.active;
    if (!provider || active?.id !== id) return;
    provider.active = undefined;
    const took = performance.now() - provider.startedAt;
    provider.serviceMs = provider.serviceMs === undefined ? took : 0.8 * provider.serviceMs + 0.2 * took;
    this.reweigh(provider);
    this.finish(active, { t: "end", id, ...(error === undefined ? {} : { error }), ...(code === undefined ? {} : { code }) });
    this.pump(provider);
    if (!provider.active) provider.agent.busy?.(false);
  }

  /** The session is over for the coordinator: out of its queue, its deadline cleared, its gateway told. */
  private finish(session: Session, message: ToGateway): void {
    const found = this.sessions.get(session.id);
    if (found && found.provider.active !== session) this.dequeue(found.provider, session);
    this.forget(session);
    session.gateway.send(message);
  }

  private forget(session: Session): void {
    clearTimeout(session.deadline);
    this.sessions.delete(session.id);
  }

  private enqueue(provider: Provider, session: Session): void {
    provider.queue.push(session);
    this.queuedByAlias.set(session.alias, (this.queuedByAlias.get(session.alias) ?? 0) + 1);
    this.reweigh(provider);
  }

  private dequeue(provider: Provider, session: Session): void {
    const at = provider.queue.indexOf(session);
    if (at < 0) return;
    provider.queue.splice(at, 1);
    this.reweigh(provider);
    const left = (this.queuedByAlias.get(session.alias) ?? 1) - 1;
    if (left === 0) this.queuedByAlias.delete(session.alias);
    else this.queuedByAlias.set(session.alias, left);
  }

  /** Its load or last assignment changed: routing here and the gateways' copies follow. */
  private reweigh(provider: Provider): void {
    this.index.reweigh(provider, load(provider));
    this.feed.touch(provider.id);
  }

  private pump(provider: Provider): void {
    if (provider.active) return;
    const next = provider.queue[0];
    if (!next) return;
    this.dequeue(provider, next);
    clearTimeout(next.deadline);
    provider.active = next;
    provider.startedAt = performance.now();
    this.reweigh(provider);
    this.totals.sessionsStarted++;
    provider.agent.busy?.(true);
    provider.agent.send({ t: "session", id: next.id, alias: next.alias, ...next.sealed });
    next.gateway.send({ t: "started", id: next.id });
  }
}
