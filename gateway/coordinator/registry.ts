// The coordinator's directory (DESIGN §1): live providers, one session at a time each with a FIFO queue in
// front, and the relay of sealed bytes between a session's gateway and its provider. Pure bookkeeping: the
// links hand it messages and ports to send on, so a unit test needs no socket.
import { ApiError } from "../../src/errors.ts";
import type { TrustLevel } from "../../src/trust.ts";
import type { FromGateway, ProviderEntry, ToAgent, ToGateway } from "../../src/wire.ts";
import { chooseProvider, type Routable } from "./routing.ts";

export interface AgentPort {
  send(message: ToAgent): void;
  /** Ends the link (the provider is leaving the directory). */
  close(reason: string): void;
}
export interface GatewayPort {
  send(message: ToGateway): void;
}

interface Session {
  id: string;
  alias: string;
  gateway: GatewayPort;
  /** The sealed request, once the gateway has sent it. */
  sealed?: { enc: string; ct: string };
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
}

type Reserve = Extract<FromGateway, { t: "reserve" }>;

export class Registry {
  private readonly providers = new Map<string, Provider>();
  private readonly sessions = new Map<string, { session: Session; provider: Provider }>();
  /** Running totals for the coordinator's metrics. */
  readonly totals = { sessionsStarted: 0, framesRelayed: 0 };

  constructor(private readonly knownAliases: ReadonlySet<string>) {}

  /** A freshly granted provider; one already connected under the same id is replaced (its sessions end, its link closes). */
  add(info: ProviderInfo, agent: AgentPort): void {
    const previous = this.providers.get(info.id)?.agent;
    this.remove(info.id, "the provider reconnected");
    previous?.close("a newer connection presented the same keys");
    this.providers.set(info.id, { ...info, agent, model_ids: [], lastAssigned: 0, queue: [], leaving: false });
  }

  /** A re-answered challenge: the rung is what the latest evidence earned. */
  setTrust(id: string, trust: TrustLevel, serial: string | undefined): void {
    const provider = this.providers.get(id);
    if (provider) Object.assign(provider, { trust, serial });
  }

  /** Keeps the catalog's aliases among those advertised; returns the ones it dropped. */
  advertise(id: string, aliases: readonly string[]): string[] {
    const provider = this.providers.get(id);
    if (!provider) return [];
    provider.model_ids = [...new Set(aliases.filter((a) => this.knownAliases.has(a)))];
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
    if (provider.active) this.finish(provider.active, { t: "gone", id: provider.active.id, started: true, reason });
    for (const session of provider.queue) this.finish(session, { t: "gone", id: session.id, started: false, reason });
  }

  /** The agent is shutting down: it leaves the listing and routing now, and its queue goes elsewhere. */
  leave(id: string): void {
    const provider = this.providers.get(id);
    if (!provider || provider.leaving) return;
    provider.leaving = true;
    const queued = provider.queue;
    provider.queue = [];
    for (const session of queued) this.finish(session, { t: "gone", id: session.id, started: false, reason: "the provider is leaving" });
  }

  entries(): ProviderEntry[] {
    return this.present().map(toEntry);
  }

  /** Providers that take sessions: connected, granted, not leaving. */
  private present(): Provider[] {
    return [...this.providers.values()].filter((p) => !p.leaving);
  }

  /** Chooses a provider and puts the session in its queue at once, so concurrent choices see each other. */
  reserve(gateway: GatewayPort, message: Reserve): ProviderEntry {
    if (this.sessions.has(message.id)) throw new ApiError("invalid_value", `Session id ${message.id} is already in use.`);
    // routing reads busy and waiting as the listing shows them, derived from the session and the queue
    const views = this.present().map((p): Routable & { provider: Provider } => ({ ...toEntry(p), lastAssigned: p.lastAssigned, provider: p }));
    const { provider } = chooseProvider(views, { alias: message.alias, floor: message.floor, pin: message.pin }, new Set(message.exclude));
    const session: Session = { id: message.id, alias: message.alias, gateway };
    provider.queue.push(session);
    provider.lastAssigned = Date.now();
    this.sessions.set(session.id, { session, provider });
    return toEntry(provider);
  }

  /** The sealed request for a reserved session; it starts when its provider is free. */
  request(gateway: GatewayPort, id: string, sealed: { enc: string; ct: string }): void {
    const found = this.sessions.get(id);
    if (!found || found.session.gateway !== gateway || found.session.sealed) return;
    found.session.sealed = sealed;
    this.pump(found.provider);
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
    provider.queue = provider.queue.filter((s) => s !== session);
    this.sessions.delete(id);
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
    active.gateway.send({ t: "frame", id, data });
  }

  /** The agent is free: the gateway learns the session ended, the next in line starts. */
  end(providerId: string, id: string, error: string | undefined): void {
    const provider = this.providers.get(providerId);
    const active = provider?.active;
    if (!provider || active?.id !== id) return;
    provider.active = undefined;
    this.finish(active, { t: "end", id, ...(error === undefined ? {} : { error }) });
    this.pump(provider);
  }

  private finish(session: Session, message: ToGateway): void {
    this.sessions.delete(session.id);
    session.gateway.send(message);
  }

  private pump(provider: Provider): void {
    if (provider.active) return;
    const next = provider.queue[0];
    // the head of the line may still be on its way from the gateway; it starts when its bytes arrive
    if (!next?.sealed) return;
    provider.queue.shift();
    provider.active = next;
    this.totals.sessionsStarted++;
    provider.agent.send({ t: "session", id: next.id, alias: next.alias, ...next.sealed });
  }
}

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
