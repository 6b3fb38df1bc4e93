// Provider enrollment tokens as the operator and the coordinator use them: a token's lookup for admission,
// `--expires` durations, and the `svc-gateway providers list` table.
import type { KeyStore, ProviderToken } from "./key-store.ts";
import { PROVIDER_TOKEN_PREFIX, secretHash } from "./secret.ts";
import { alignTable } from "../../src/process/text-table.ts";

/** What the coordinator asks at each agent's connect and challenge: the live token behind this secret. */
export function enrollmentLookup(store: KeyStore): (token: string) => Promise<ProviderToken | undefined> {
  return async (token) => (token.startsWith(PROVIDER_TOKEN_PREFIX) ? store.liveProviderToken(secretHash(token)) : undefined);
}

/** What the coordinator's enrollment watch asks every second: the ids of the tokens live now. */
export function liveEnrollments(store: KeyStore): () => Promise<ReadonlySet<string>> {
  return async () => new Set(await store.liveProviderTokenIds());
}

const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--expires`: a duration (`90m`, `12h`, `30d`) or a date (`2027-01-31`); returns the expiry in ms. */
export function parseExpiry(value: string, now = Date.now()): number {
  const duration = /^(\d+)([mhd])$/.exec(value);
  if (duration) return now + Number(duration[1]) * UNIT_MS[duration[2]!]!;
  const date = /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(date)) throw new Error(`--expires ${value}: give a duration such as 90m, 12h or 30d, or a date such as 2027-01-31`);
  if (date <= now) throw new Error(`--expires ${value}: that date has passed`);
  return date;
}

const when = (ms: number | null) => (ms === null ? "-" : new Date(ms).toISOString().slice(0, 16).replace("T", " "));

function state(token: ProviderToken, now: number): string {
  if (token.revokedAt !== null) return "revoked";
  if (token.expiresAt !== null && token.expiresAt <= now) return "expired";
  return "live";
}

/** One line per token, aligned: id, name, prefix, state, created, expires, last used. */
export function tokenTable(tokens: readonly ProviderToken[], now = Date.now()): string {
  const rows = [["ID", "NAME", "TOKEN", "STATE", "CREATED", "EXPIRES", "LAST USED"]];
  for (const t of tokens) rows.push([t.id, t.name, t.prefix, state(t, now), when(t.createdAt), when(t.expiresAt), when(t.lastUsedAt)]);
  return alignTable(rows);
}
