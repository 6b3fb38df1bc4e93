// The gateway's copy of the coordinator's directory (DESIGN §7), kept by the deltas the coordinator sends:
// listings read it and routing chooses from it (the same index the coordinator routes with), so neither waits
// on the coordinator. A choice counts on its provider here until the coordinator's delta counts it there.
// It also remembers, per affinity key, the provider it last placed that key on (bounded and expiring), so a
// conversation goes back to the provider that may still hold its prompt cache when that one is idle.
import { LRUCache } from "lru-cache";
import { ProviderIndex, route } from "../routing/provider-index.ts";
import { ApiError } from "../../src/errors.ts";
import type { RouteRequest } from "../../src/routing/choose.ts";
import type { DirectoryEntry, ListedProvider, ProviderRecord, QueueCaps } from "../../src/wire/gateway.ts";

/** One provider of the copy, as the index reads it. */
interface Copied {
  id: string;
  trust: DirectoryEntry["trust"];
  model_ids: readonly string[];
  lastAssigned: number;
  entry: DirectoryEntry;
  /** This gateway's placements on it that the coordinator's entry does not count yet. */
  ours: number;
}

/** What the coordinator's `directory` message says. */
export interface DirectoryDelta {
  reset?: true;
  more?: true;
  put: DirectoryEntry[];
  gone: string[];
  placed?: string[];
  queue?: QueueCaps;
}

/** Affinity keys remembered at most, least recently used out first: about 20 MB with 80-character keys. */
export const AFFINITY_MAX_KEYS = 100_000;
/** How long a placement is remembered: the agents' default prompt-cache TTL, past which nothing is left to find. */
export const AFFINITY_TTL_MS = 5 * 60_000;

export interface AffinityOptions {
  maxKeys?: number;
  ttlMs?: number;
  /** Milliseconds clock for the TTL; tests pass their own. */
  now?: () => number;
}

export class DirectoryCopy {
  private readonly providers = new Map<string, Copied>();
  private index = new ProviderIndex<Copied>();
  /** Placements not yet counted by the coordinator: session id → provider id. */
  private readonly pending = new Map<string, string>();
  /** Affinity key → the provider last chosen for it. Never listed nor logged: only routing reads it. */
  private readonly affinity: LRUCache<string, string>;
  private synced = false;
  /** The coordinator's queue caps, once it has said them. */
  private queue: QueueCaps | undefined;

  constructor({ maxKeys = AFFINITY_MAX_KEYS, ttlMs = AFFINITY_TTL_MS, now }: AffinityOptions = {}) {
    this.affinity = new LRUCache<string, string>({ max: maxKeys, ttl: ttlMs, ...(now ? { perf: { now } } : {}) });
  }

  /** Whether the whole directory has arrived since the link (re)opened. */
  get ready(): boolean {
    return this.synced;
  }

  apply(delta: DirectoryDelta): void {
    if (delta.reset) {
      this.clear();
      this.queue = delta.queue;
    }
    // the whole directory may come in parts: ready once its last part is in
    if (!delta.more) this.synced = true;
    for (const session of delta.placed ?? []) this.settle(session);
    this.update(delta.put, delta.gone);
  }

  /** Entries to put (new or changed) and ids that left, outside the coordinator's numbering (a provider's check finished). */
  update(put: readonly DirectoryEntry[], gone: readonly string[]): void {
    for (const entry of put) {
      let copied = this.providers.get(entry.id);
      if (!copied) this.providers.set(entry.id, (copied = { id: entry.id, trust: entry.trust, model_ids: entry.model_ids, lastAssigned: 0, entry, ours: 0 }));
      copied.entry = entry;
      copied.trust = entry.trust;
      copied.model_ids = entry.model_ids;
      copied.lastAssigned = Math.max(copied.lastAssigned, entry.last_assigned);
      this.index.put(copied, load(copied));
    }
    for (const id of gone) {
      this.providers.delete(id);
      this.index.delete(id);
    }
  }

  /** The link is down: nothing is known until the next whole directory. */
  clear(): void {
    this.providers.clear();
    this.index = new ProviderIndex<Copied>();
    this.pending.clear();
    this.synced = false;
  }

  /** SPEC §2.4's listing: every provider that takes sessions, as the coordinator last said, at the rung its evidence proves here. */
  list(): ListedProvider[] {
    return [...this.providers.values()].map(({ entry }) => ({ ...record(entry), evidence_sha256: entry.evidence_sha256 }));
  }

  /**
   * Routing (SPEC §4.1) over the copy for session `session`, counted on the chosen provider until the
   * coordinator's own count arrives, so concurrent choices here spread as they would there. With an
   * `affinity` key (opaque: the gateway derives it per caller and alias), an idle provider that last took
   * that key is preferred, and an unpinned choice is remembered for the key. Throws the errors routing throws.
   */
  choose(session: string, request: RouteRequest & { affinity?: string }, exclude: readonly string[]): DirectoryEntry {
    const { affinity, ...routing } = request;
    // a pin chooses for itself, and is not remembered: affinity is routing's own guess, never a caller's choice
    const affine = affinity !== undefined && request.pin === undefined ? affinity : undefined;
    const prefer = affine === undefined ? undefined : this.affinity.get(affine);
    const chosen = route(this.index, prefer === undefined ? routing : { ...routing, prefer }, exclude, view);
    if (affine !== undefined) this.affinity.set(affine, chosen.id);
    chosen.ours++;
    chosen.lastAssigned = Date.now();
    this.index.put(chosen, load(chosen));
    this.pending.set(session, chosen.id);
    return chosen.entry;
  }

  /** Another gateway placed affinity key `key` on `provider`: its next turn through this one goes there too. */
  remember(key: string, provider: string): void {
    this.affinity.set(key, provider);
  }

  /**
   * Admission from the copy, before the request costs any work: 503 overloaded when even the least loaded
   * eligible provider's queue is at the coordinator's cap; throws what routing throws when none is eligible.
   * Counts nothing: the coordinator, where every gateway's placements meet, still decides at placement.
   */
  admit(request: RouteRequest, exclude: readonly string[]): void {
    const chosen = route(this.index, request, exclude, view);
    const cap = this.queue?.per_provider;
    // of the sessions on a provider one runs; the rest wait in its queue
    const queued = load(chosen) - 1;
    if (cap === undefined || queued < cap) return;
    throw new ApiError("overloaded", `The service is at capacity: provider ${chosen.id} already has ${queued} requests waiting; retry after the Retry-After interval.`);
  }

  /** The session's placement is over (refused, failed before it was sent, or counted by the coordinator). */
  settle(session: string): void {
    const id = this.pending.get(session);
    if (id === undefined) return;
    this.pending.delete(session);
    const copied = this.providers.get(id);
    if (!copied) return;
    copied.ours--;
    this.index.put(copied, load(copied));
  }
}

const load = (c: Copied): number => (c.entry.busy ? 1 : 0) + c.entry.waiting + c.ours;

/** What chooseProvider reads for a pinned request's candidates. */
const view = (c: Copied) => ({ ...record(c.entry), lastAssigned: c.lastAssigned });

export function record(entry: DirectoryEntry): ProviderRecord {
  const { signing_key: _signing, sealing_key: _sealing, last_assigned: _last, evidence_sha256: _evidence, enrollment: _enrollment, ...rest } = entry;
  return rest;
}
