// Where the gateway keeps users, their API keys, sign-in sessions, usage, rate-limit overrides and provider
// enrollment tokens. SQLite (sqlite-store.ts) is the default; PostgreSQL (postgres-store.ts) serves replicas
// (DESIGN §7). Asynchronous, since a network database is; the request path reads UserKeys' cache instead.
import type { AuditStore } from "./audit-store.ts";
import type { LeaseSource } from "./budget-lease.ts";
import type { ClaimEpochs } from "../coordinator/claim-epochs.ts";

export interface UserClaims {
  issuer: string;
  subject: string;
  email: string | null;
  name: string | null;
}

export interface User {
  id: number;
  email: string | null;
  name: string | null;
}

export interface KeyRecord {
  id: string;
  name: string;
  prefix: string;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
  requests: number;
  promptTokens: number;
  completionTokens: number;
}

/** Whose a live key is: what a request authenticated by it acts as. */
export interface KeyOwner {
  keyId: string;
  userId: number;
}

/** What a batch of requests did with one key since the last write. */
export interface KeyActivity {
  lastUsedAt: number;
  requests: number;
  promptTokens: number;
  completionTokens: number;
}

/** A key's (or a user's) overrides of the operator's default rate limits (`serve --key-*`, `--user-*`); null: the default applies. */
export interface KeyLimits {
  maxConcurrency: number | null;
  rpm: number | null;
  tpm: number | null;
}

/** Any user's key as the operator's `svc-gateway keys list` shows it: its owner and its limits. */
export interface KeyListing extends KeyRecord {
  userId: number;
  owner: string | null;
  limits: KeyLimits;
}

/** A user as the operator's `svc-gateway users list` shows them: live keys and overrides of the `serve --user-*` defaults. */
export interface UserListing extends User {
  liveKeys: number;
  limits: KeyLimits;
}

/** The default cap on a user's live keys (`serve --max-keys-per-user`): per-key limits must not multiply without end. */
export const DEFAULT_MAX_KEYS_PER_USER = 20;

/** Thrown by `createKey` when the user already holds `max` live keys; nothing is written. */
export class KeyCapReached extends Error {
  constructor(readonly max: number) {
    super(`this user already has ${max} live API keys, the most allowed; revoke one first`);
  }
}

/** Requests and tokens from verified receipts. */
export interface UsageCounts {
  requests: number;
  promptTokens: number;
  completionTokens: number;
}

/**
 * One key's use of one provider on one UTC day (`YYYY-MM-DD`). Operator keys have no row in the keys table
 * but are counted here too, under their `op_…` id, so the operator's totals per provider are complete.
 */
export interface DailyUsage extends UsageCounts {
  day: string;
  keyId: string;
  providerId: string;
}

/** A provider enrollment token as listed: never its secret. */
export interface ProviderToken {
  id: string;
  name: string;
  prefix: string;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  lastUsedAt: number | null;
}

export interface KeyStore {
  /** Creates the user on first sign-in; later sign-ins refresh email and name. */
  upsertUser(claims: UserClaims, now?: number): Promise<number>;
  /**
   * The secret is returned here once and exists nowhere else afterwards: only its hash is written. Throws
   * KeyCapReached when the user already holds `maxLiveKeys` live keys (counted and written in one transaction).
   */
  createKey(userId: number, name: string, now?: number, maxLiveKeys?: number): Promise<{ key: KeyRecord; secret: string }>;
  /** One user's keys, newest first; never anyone else's. */
  listKeys(userId: number): Promise<KeyRecord[]>;
  /** The key only when it belongs to `userId`: the owner check lives in the query, not in callers. */
  ownedKey(userId: number, keyId: string): Promise<KeyRecord | undefined>;
  /** Revokes the user's own live key; returns its secret hash so caches can drop it, or undefined. */
  revokeKey(userId: number, keyId: string, now?: number): Promise<string | undefined>;
  /** Revokes any user's live key, for the operator (`svc-gateway keys revoke`); its secret hash, or undefined. */
  revokeAnyKey(keyId: string, now?: number): Promise<string | undefined>;
  /** Calls `drop` with the secret hash of every key revoked from now on, by this process or any other. */
  watchRevocations(drop: (hash: string) => void): Promise<void>;
  /** The users with this email (compared case-insensitively), oldest first. */
  usersByEmail(email: string): Promise<User[]>;
  /** The owner of the live key with this secret hash. */
  liveKey(hash: string): Promise<KeyOwner | undefined>;
  /** Writes a batch of per-key activity at once. */
  recordActivity(batch: ReadonlyMap<string, KeyActivity>): Promise<void>;
  /** Adds a batch of per-day counts to what the store holds for each (day, key, provider). */
  recordDailyUsage(batch: readonly DailyUsage[]): Promise<void>;
  /** Per-day counts from `sinceDay` (inclusive, UTC `YYYY-MM-DD`) on; with `userId`, only that user's keys. */
  dailyUsage(sinceDay: string, userId?: number): Promise<DailyUsage[]>;
  /** A key's rate-limit overrides (revoked keys too); undefined when there is no such key. */
  keyLimits(keyId: string): Promise<KeyLimits | undefined>;
  /** Sets the given overrides (null: back to the default) and returns them all; undefined when no such key. */
  setKeyLimits(keyId: string, limits: Partial<KeyLimits>): Promise<KeyLimits | undefined>;
  /** A user's overrides of the per-user rate limits; undefined when there is no such user. */
  userLimits(userId: number): Promise<KeyLimits | undefined>;
  /** Sets the given per-user overrides (null: back to the default) and returns them all; undefined when no such user. */
  setUserLimits(userId: number, limits: Partial<KeyLimits>): Promise<KeyLimits | undefined>;
  /** Every user with their live key count and overrides, oldest first: for the operator. */
  listUsers(): Promise<UserListing[]>;
  /** Every user's keys, newest first: for the operator, never for a settings page. */
  listAllKeys(): Promise<KeyListing[]>;
  createSession(id: string, userId: number, expiresAt: number, now?: number): Promise<void>;
  /** The signed-in user of a live session. */
  sessionUser(id: string, now?: number): Promise<User | undefined>;
  deleteSession(id: string): Promise<void>;
  /** A new provider enrollment token; its secret is returned here once, only its hash is written. */
  enrollProvider(name: string, expiresAt: number | null, now?: number): Promise<{ token: ProviderToken; secret: string }>;
  /** Every enrollment token, newest first. */
  listProviderTokens(): Promise<ProviderToken[]>;
  /** Revokes a live token; false when there is none with that id. */
  revokeProviderToken(id: string, now?: number): Promise<boolean>;
  /** The ids of every live (neither revoked nor expired) token: what the coordinator checks its agents against. */
  liveProviderTokenIds(now?: number): Promise<string[]>;
  /** The live (neither revoked nor expired) token with this secret hash, noted as used now. */
  liveProviderToken(hash: string, now?: number): Promise<ProviderToken | undefined>;
  /** Every row of one table as stored (secrets only as hashes): what `keys migrate` copies. */
  exportRows(table: StoreTable): Promise<StoreRow[]>;
  /** Writes rows read by exportRows into an empty table of the same name, in one transaction. */
  importRows(table: StoreTable, rows: readonly StoreRow[]): Promise<void>;
  /** Per-minute limits shared by every gateway on this store (PostgreSQL); absent, each gateway counts for itself. */
  budgetLeases?(): LeaseSource;
  /** The order of coordinators' claims on providers over NATS (PostgreSQL); absent, no coordinator may run on NATS. */
  claimEpochs?(): ClaimEpochs;
  /**
   * The secret named `name` that every gateway on this store shares (PostgreSQL): the first to ask stores `made`,
   * the rest read it. Absent, each gateway has only its own.
   */
  sharedSecret?(name: string, made: string): Promise<string>;
  /** The audits this store's gateways concluded: their records, bars and failures' evidence (audit-store.ts). */
  audits(): AuditStore;
  close(): Promise<void>;
}

/** The tables every store holds, in an order that keeps references valid when they are copied. */
export const STORE_TABLES = ["users", "api_keys", "sessions", "provider_tokens", "usage_days"] as const;
export type StoreTable = (typeof STORE_TABLES)[number];
export type StoreRow = Record<string, string | number | null>;

/** Keys and users carry the same three override columns: both stores answer the four override calls through two queries. */
export abstract class OverridesByTable {
  /** `table` is one of the two literals, never input. */
  protected abstract limitsIn(table: "api_keys" | "users", id: string | number): Promise<KeyLimits | undefined>;
  protected abstract setLimitsIn(table: "api_keys" | "users", id: string | number, limits: Partial<KeyLimits>): Promise<KeyLimits | undefined>;

  keyLimits(keyId: string): Promise<KeyLimits | undefined> {
    return this.limitsIn("api_keys", keyId);
  }

  setKeyLimits(keyId: string, limits: Partial<KeyLimits>): Promise<KeyLimits | undefined> {
    return this.setLimitsIn("api_keys", keyId, limits);
  }

  userLimits(userId: number): Promise<KeyLimits | undefined> {
    return this.limitsIn("users", userId);
  }

  setUserLimits(userId: number, limits: Partial<KeyLimits>): Promise<KeyLimits | undefined> {
    return this.setLimitsIn("users", userId, limits);
  }
}
