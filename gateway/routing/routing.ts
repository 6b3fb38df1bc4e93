// Which provider takes a request: the pinned one, or idle-first among those at or above the gateway's floor
// that serve the alias (SPEC §4.1). Each gateway chooses from its own copy of the directory; the coordinator,
// where every gateway's choices meet, only checks that a choice still holds (gateway/coordinator/registry.ts).
import { ApiError } from "../../src/errors.ts";
import { atOrAbove, qualified, type TrustLevel } from "../../src/receipt/rungs.ts";
import type { ProviderRecord } from "../../src/wire/gateway.ts";

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
export function chooseProvider<P extends Routable>(providers: readonly P[], { alias, floor, pin, prefer, only }: RouteRequest, exclude: ReadonlySet<string> = new Set()): P {
  if (pin !== undefined) return pinned(providers, alias, floor, pin);
  const candidates = qualified(providers, floor).filter((p) => p.model_ids.includes(alias) && !exclude.has(p.id) && (only === undefined || only.includes(p.id)));
  if (candidates.length === 0) throw noProvider(alias, floor);
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
