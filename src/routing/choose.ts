// Which provider takes a request: the pinned one, or idle-first among those at or above the gateway's floor
// that serve the alias (SPEC §4.1). Each gateway chooses from its own copy of the directory; the coordinator,
// where every gateway's choices meet, only checks that a choice still holds (gateway/coordinator/registry.ts).
// A gateway-blind request's candidates are the same choice repeated (chooseCandidates): the caller's client seals to
// them in that order from the listing, and the gateway places the request with the first of them it can.
import { ApiError } from "../errors.ts";
import { atOrAbove, qualified, type TrustLevel } from "../receipt/rungs.ts";
import type { ProviderRecord } from "../wire/gateway.ts";

/** A provider as routing sees it: its record plus when it was last given a session. */
export interface Routable extends ProviderRecord {
  /** Milliseconds timestamp of its last assignment; 0 if never. */
  lastAssigned: number;
}

export interface RouteRequest {
  alias: string;
  floor: TrustLevel;
  /** Whole provider id or a prefix of at least 8 characters (checked at parse time). */
  pin?: string;
  /**
   * A provider to take if it is idle and would qualify (the one that last served this request's affinity key,
   * where its prompt cache may be): idle-first, the floor and exclusions still hold, and a pin overrides it.
   */
  prefer?: string;
  /** The only providers it may go to: a gateway-blind request's candidates, the ones it was sealed to (DESIGN §10). */
  only?: readonly string[];
}

/** Picks the provider for a request, or throws the SPEC's error for why there is none. */
export function chooseProvider<P extends Routable>(providers: readonly P[], request: RouteRequest, exclude: ReadonlySet<string> = new Set()): P {
  return chooseCandidates(providers, request, 1, exclude)[0]!;
}

/**
 * Up to `count` distinct providers in the order chooseProvider takes them, each its choice once those before it are
 * excluded (a pin gives its one): the candidates a gateway-blind request is sealed to, and among them the one the
 * gateway places it with. Throws chooseProvider's error when not even one qualifies.
 */
export function chooseCandidates<P extends Routable>(providers: readonly P[], { alias, floor, pin, prefer, only }: RouteRequest, count: number, exclude: ReadonlySet<string> = new Set()): P[] {
  if (pin !== undefined) return [pinned(providers, alias, floor, pin)];
  const left = qualified(providers, floor).filter((p) => p.model_ids.includes(alias) && !exclude.has(p.id) && (only === undefined || only.includes(p.id)));
  if (left.length === 0) throw noProvider(alias, floor);
  const chosen: P[] = [];
  while (chosen.length < count && left.length > 0) {
    const next = pick(left, prefer);
    chosen.push(next);
    left.splice(left.indexOf(next), 1);
  }
  return chosen;
}

function pick<P extends Routable>(candidates: readonly P[], prefer: string | undefined): P {
  const load = (p: P) => (p.busy ? 1 : 0) + p.waiting;
  // an idle preferred provider is as good as any idle one by SPEC §4.1, and may hold this caller's cache
  const preferred = prefer === undefined ? undefined : candidates.find((p) => p.id === prefer && load(p) === 0);
  if (preferred) return preferred;
  // idle first, then the shortest queue; among equals the least recently used, so work spreads fairly
  return candidates.reduce((best, p) => (load(p) < load(best) || (load(p) === load(best) && p.lastAssigned < best.lastAssigned) ? p : best));
}

/** The 503 for an unpinned request that no provider can take. */
export function noProvider(alias: string, floor: TrustLevel): ApiError {
  return new ApiError("provider_unavailable", `No provider at or above the ${floor} rung serves ${alias} right now; GET /v1/models lists what is servable.`);
}

function pinned<P extends ProviderRecord>(providers: readonly P[], alias: string, floor: TrustLevel, pin: string): P {
  const exact = providers.find((p) => p.id === pin);
  const matches = exact ? [exact] : providers.filter((p) => p.id.startsWith(pin));
  if (matches.length > 1) {
    throw new ApiError("invalid_value", `The provider pin ${pin} matches ${matches.length} providers; send more of the id.`, {
      param: "provider",
    });
  }
  const match = matches[0];
  // a pinned call never hops: whatever keeps this machine from serving is a 503 for this request
  if (!match) throw new ApiError("provider_unavailable", `Provider ${pin} is not online.`);
  if (!atOrAbove(match.trust, floor)) {
    throw new ApiError(
      "provider_unavailable",
      `Provider ${match.id} is at the ${match.trust} rung, below this gateway's trust floor (${floor}).`,
    );
  }
  if (!match.model_ids.includes(alias)) {
    throw new ApiError("provider_unavailable", `Provider ${match.id} does not serve ${alias} right now.`);
  }
  return match;
}
