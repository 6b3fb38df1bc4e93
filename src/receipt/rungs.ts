// The trust rungs (SPEC §2.4, DESIGN §4), lowest first, and how a gateway's floor compares them.
export const TRUST_LEVELS = ["process", "transparent", "hardware"] as const;
export type TrustLevel = (typeof TRUST_LEVELS)[number];

/** The providers a gateway with this floor lists and uses. */
export function qualified<P extends { trust: TrustLevel }>(providers: readonly P[], floor: TrustLevel): P[] {
  return providers.filter((p) => atOrAbove(p.trust, floor));
}

export function atOrAbove(trust: TrustLevel, floor: TrustLevel): boolean {
  return TRUST_LEVELS.indexOf(trust) >= TRUST_LEVELS.indexOf(floor);
}
