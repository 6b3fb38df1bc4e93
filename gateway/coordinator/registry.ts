// The coordinator's directory (DESIGN §1): live providers, one session at a time each with a FIFO queue in
// front, and the relay of sealed bytes between a session's gateway and its provider. It also keeps the
// queues bounded: a reservation whose sealed request never comes is dropped, queues have a cap and a
// longest wait. Pure bookkeeping: the links hand it messages and ports to send on, so a unit test needs no socket.
import { ApiError } from "../../src/errors.ts";
import type { TrustLevel } from "../../src/trust.ts";
import { toWireError, type FromGateway, type ProviderEntry, type ToAgent, type ToGateway } from "../../src/wire.ts";
import { ProviderIndex, route } from "./provider-index.ts";
import { DEFAULT_QUEUE_LIMITS, UNKNOWN_SERVICE_MS, type QueueLimits } from "./queue-limits.ts";

export { DEFAULT_QUEUE_LIMITS, type QueueLimits } from "./queue-limits.ts";

export interface AgentPort {
  send(message: ToAgent): void;
  /** Ends the link (the provider is leaving the directory). */
  close(reason: string): void;
  /**
   * The provider was given a session (true), or has none running any more (false): its link watches it at the
   * busy heartbeat rate while it works, so a stream's failure is reported within the SPEC's bound.
   */
  busy?(on: boolean): void;
}
/** A session's sealed request; `whole` asks the agent for the answer in one frame (a non-stream caller). */
type Sealed = { enc: string; ct: string; whole?: true };

export interface GatewayPort {
  send(message: ToGateway): void;
}

interface Session {
  id: string;
  alias: string;
  gateway: GatewayPort;
  /** The sealed request, once the gateway has sent it. */
  sealed?: Sealed;
  /** When it was reserved (performance.now()). */
  reservedAt: number;
  /** Reserved, and its sealed request not arrived yet (counted against its link's pending limit). */
  pending: boolean;
  /** A frame of its answer has gone to the gateway: from then on it cannot be run elsewhere. */
  relayed?: true;
  /** The reservation's deadline for its sealed request, then the queue's longest wait. */
  deadline?: NodeJS.Timeout;
}

export interface ProviderInfo {
  id: string;
  name?: string;
  trust: TrustLevel;
  serial?: string;
  signingKey: string;
  sealingKey: string;
}

interface Provider extends ProviderInfo {
  agent: AgentPort;
  model_ids: string[];
  /** When it was last given a session (routing's least-recently-used tie-break). */
  lastAssigned: number;
  /** The session the agent is running (busy until the agent says it ended). */
  active?: Session;
  queue: Session[];
  /** The agent said it is leaving: no new sessions, out of the listing; its running session may finish. */
  leaving: boolean;
  /** When the running session started, and the moving average of how long sessions take here (ms). */
  startedAt: number;
  serviceMs?: number;
}

type Reserve = Extract<FromGateway, { t: "reserve" }>;

export class Registry {
  private readonly providers = new Map<string, Provider>();
  /** The providers that take sessions (not leaving), ordered for routing per alias and rung. */
  private readonly index = new ProviderIndex<Provider>();
  private readonly sessions = new Map<string, { session: Session; provider: Provider }>();
  /** Sessions queued per alias, over all providers. */
  private readonly queuedByAlias = new Map<string, number>();
  /** Reservations per gateway link still waiting for their sealed request. */
  private readonly pending = new Map<GatewayPort, number>();
  private readonly limits: QueueLimits;
  /** Running totals for the coordinator's metrics. */
  readonly totals = { sessionsStarted: 0, framesRelayed: 0, reservationsDropped: 0, overloaded: 0 };

  constructor(
    private readonly knownAliases: ReadonlySet<string>,
    limits: Partial<QueueLimits> = {},
  ) {
    this.limits = { ...DEFAULT_QUEUE_LIMITS, ...limits };
  }

  /** A freshly granted provider; one already connected under the same id is replaced (its sessions end, its link closes). */
  add(info: ProviderInfo, agent: AgentPort): void {
    const previous = this.providers.get(info.id)?.agent;
    this.remove(info.id, "the provider reconnected");
    previous?.close("a newer connection presented the same keys");
    const provider: Provider = { ...info, agent, model_ids: [], lastAssigned: 0, queue: [], leaving: false, startedAt: 0 };
    this.providers.set(info.id, provider);
    this.index.put(provider, 0);
  }

  /** A re-answered challenge: the rung is what the latest evidence earned. */
  setTrust(id: string, trust: TrustLevel, serial: string | undefined): void {
    const provider = this.providers.get(id);
    if (!provider) return;
    Object.assign(provider, { trust, serial });
    if (!provider.leaving) this.index.put(provider, load(provider));
  }

  /** Keeps the catalog's aliases among those advertised; returns the ones it dropped. */
  advertise(id: string, aliases: readonly string[]): string[] {
    const provider = this.providers.get(id);
    if (!provider) return [];
    provider.model_ids = [...new Set(aliases.filter((a) => this.knownAliases.has(a)))];
    if (!provider.leaving) this.index.put(provider, load(provider));
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
    this.index.delete(id);
    // a running session of which the gateway has seen nothing may still go elsewhere: an idle agent that vanished
    // is found out only once it is given work and stays silent (src/heartbeat.ts), and its caller should not pay for that
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
    for (const session of [...provider.queue]) this.finish(session, { t: "gone", id: session.id, started: false, reason: "the provider is leaving" });
  }

  /** Providers that take sessions (connected, granted, not leaving), for listings: O(n), never per request. */
  entries(): ProviderEntry[] {
    return [...this.providers.values()].filter((p) => !p.leaving).map(toEntry);
  }

  /** Chooses a provider and puts the session in its queue at once, so concurrent choices see each other. */
  reserve(gateway: GatewayPort, message: Reserve): ProviderEntry {
    if (this.sessions.has(message.id)) throw new ApiError("invalid_value", `Session id ${message.id} is already in use.`);
    const pending = this.pending.get(gateway) ?? 0;
    if (pending >= this.limits.pendingPerLink) {
      this.totals.reservationsDropped++;
      throw new ApiError("overloaded", `This gateway link already holds ${pending} reservations whose sealed requests have not arrived.`, { retryAfterS: 1 });
    }
    const provider = route(this.index, message, message.exclude, routable);
    this.admit(provider, message.alias);
    const session: Session = { id: message.id, alias: message.alias, gateway, reservedAt: performance.now(), pending: true };
    provider.lastAssigned = Date.now();
    this.enqueue(provider, session);
    this.sessions.set(session.id, { session, provider });
    this.pending.set(gateway, pending + 1);
    session.deadline = setTimeout(() => this.expire(session.id, "its sealed request did not arrive in time"), this.limits.reservationMs).unref();
    return toEntry(provider);
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

  /** The sealed request for a reserved session; it starts when its provider is free. */
  request(gateway: GatewayPort, id: string, sealed: Sealed): void {
    const found = this.sessions.get(id);
    if (!found || found.session.gateway !== gateway || found.session.sealed) return;
    const { session } = found;
    session.sealed = sealed;
    this.unpend(session);
    clearTimeout(session.deadline);
    const left = this.limits.queuedMs - (performance.now() - session.reservedAt);
    session.deadline = setTimeout(() => this.expire(id, `it waited ${Math.round(this.limits.queuedMs / 1000)} s in the queue`), Math.max(0, left)).unref();
    this.pump(found.provider);
  }

  /** A session that overstayed its reservation or its wait leaves the queue with 503 overloaded. */
  private expire(id: string, why: string): void {
    const found = this.sessions.get(id);
    if (!found || found.provider.active === found.session) return;
    const { session, provider } = found;
    if (!session.sealed) this.totals.reservationsDropped++;
    else this.totals.overloaded++;
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

  /** A sealed frame from a provider, relayed as-is to the gateway of the session it is running. */
  frame(providerId: string, id: string, data: string): void {
    const active = this.providers.get(providerId)?.active;
    if (active?.id !== id) return;
    this.totals.framesRelayed++;
    active.relayed = true;
    active.gateway.send({ t: "frame", id, data });
  }

  /** The agent is free: the gateway learns the session ended, the next in line starts. */
  end(providerId: string, id: string, error: string | undefined): void {
    const provider = this.providers.get(providerId);
    const active = provider?.active;
    if (!provider || active?.id !== id) return;
    provider.active = undefined;
    const took = performance.now() - provider.startedAt;
    provider.serviceMs = provider.serviceMs === undefined ? took : 0.8 * provider.serviceMs + 0.2 * took;
    this.index.reweigh(provider, load(provider));
    this.finish(active, { t: "end", id, ...(error === undefined ? {} : { error }) });
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
    this.unpend(session);
    this.sessions.delete(session.id);
  }

  private unpend(session: Session): void {
    if (!session.pending) return;
    session.pending = false;
    const count = this.pending.get(session.gateway) ?? 1;
    if (count <= 1) this.pending.delete(session.gateway);
    else this.pending.set(session.gateway, count - 1);
  }

  private enqueue(provider: Provider, session: Session): void {
    provider.queue.push(session);
    this.queuedByAlias.set(session.alias, (this.queuedByAlias.get(session.alias) ?? 0) + 1);
    this.index.reweigh(provider, load(provider));
  }

  private dequeue(provider: Provider, session: Session): void {
    const at = provider.queue.indexOf(session);
    if (at < 0) return;
    provider.queue.splice(at, 1);
    this.index.reweigh(provider, load(provider));
    const left = (this.queuedByAlias.get(session.alias) ?? 1) - 1;
    if (left === 0) this.queuedByAlias.delete(session.alias);
    else this.queuedByAlias.set(session.alias, left);
  }

  private pump(provider: Provider): void {
    if (provider.active) return;
    const next = provider.queue[0];
    // the head of the line may still be on its way from the gateway; it starts when its bytes arrive
    if (!next?.sealed) return;
    this.dequeue(provider, next);
    clearTimeout(next.deadline);
    provider.active = next;
    provider.startedAt = performance.now();
    this.index.reweigh(provider, load(provider));
    this.totals.sessionsStarted++;
    provider.agent.busy?.(true);
    provider.agent.send({ t: "session", id: next.id, alias: next.alias, ...next.sealed });
  }
}

/** Routing's load: the running session and the queue in front of the provider. */
const load = (p: Provider): number => (p.active ? 1 : 0) + p.queue.length;

/** The record chooseProvider reads, for a pinned request's few candidates. */
const routable = (p: Provider) => ({ ...toEntry(p), lastAssigned: p.lastAssigned });

function toEntry(p: Provider): ProviderEntry {
  return {
    id: p.id,
    model_ids: [...p.model_ids],
    trust: p.trust,
    busy: p.active !== undefined,
    waiting: p.queue.length,
    ...(p.serial === undefined ? {} : { serial: p.serial }),
    signing_key: p.signingKey,
    sealing_key: p.sealingKey,
  };
}

/** A slot frees when a running session ends: about one service time away. */
function retryAfterOf(provider: Provider): number {
  return (provider.serviceMs ?? UNKNOWN_SERVICE_MS) / 1000;
}
