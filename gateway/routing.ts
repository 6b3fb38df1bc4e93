// Which providers a gateway may list and use (its trust floor), and which one takes a request: the pinned
// one, or idle-first among those serving the alias (SPEC §4.1).
import { ApiError } from "../src/errors.ts";
import { TRUST_LEVELS, type ProviderRecord, type TrustLevel } from "./directory.ts";

export function atOrAbove(trust: TrustLevel, floor: TrustLevel): boolean {
  return TRUST_LEVELS.indexOf(trust) >= TRUST_LEVELS.indexOf(floor);
}

/** The providers this gateway lists and uses. */
export function qualified(providers: readonly ProviderRecord[], floor: TrustLevel): ProviderRecord[] {
  return providers.filter((p) => atOrAbove(p.trust, floor));
}

/** SPEC §4.2: the union of aliases that qualified providers advertise now, in catalog order. */
export function servableAliases(providers: readonly ProviderRecord[], floor: TrustLevel, catalogOrder: readonly string[]): string[] {
  const offered = new Set(qualified(providers, floor).flatMap((p) => p.model_ids));
  return catalogOrder.filter((alias) => offered.has(alias));
}

export interface RouteRequest {
  alias: string;
  floor: TrustLevel;
  /** Whole provider id or a prefix of at least 8 characters (checked at parse time). */
  pin?: string;
}

/** Picks the provider for a request, or throws the SPEC's error for why there is none. */
export function chooseProvider(
  providers: readonly ProviderRecord[],
  { alias, floor, pin }: RouteRequest,
  random: () => number = Math.random,
): ProviderRecord {
  if (pin !== undefined) return pinned(providers, alias, floor, pin);
  const candidates = qualified(providers, floor).filter((p) => p.model_ids.includes(alias));
  if (candidates.length === 0) {
    throw new ApiError(
      "provider_unavailable",
      `No provider at or above the ${floor} rung serves ${alias} right now; GET /v1/models lists what is servable.`,
    );
  }
  const load = (p: ProviderRecord) => (p.busy ? 1 : 0) + p.waiting;
  const least = Math.min(...candidates.map(load));
  // among equally loaded machines, spread the work rather than always picking the first one listed
  const idlest = candidates.filter((p) => load(p) === least);
  return idlest[Math.floor(random() * idlest.length)] ?? idlest[0]!;
}

function pinned(providers: readonly ProviderRecord[], alias: string, floor: TrustLevel, pin: string): ProviderRecord {
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
