// Who an audit comes from (issue 43 item 2, design §4 point 2): a provider sees a request's cache owner and scope,
// HMACs of the caller's key id, so one auditor key would give every audit the same owner. Instead the auditor holds a
// pool of `--audit-identities` ordinary keys of a user `svc-auditor` in the key store. Each audit takes one at random
// and is sent under it as a caller's request is under its key, so each identity gathers history and cache hits as a
// caller does; each is retired (revoked, replaced by a fresh key) after a lifetime drawn from 1–14 days, so no owner
// outlives a caller's.
import { KeyCapReached, type KeyRecord, type KeyStore, type UserClaims } from "../keys/key-store.ts";
import type { Principal } from "../keys/auth.ts";
import type { Dice } from "./scheduler.ts";

export const DEFAULT_AUDIT_IDENTITIES = 16;
export const MAX_AUDIT_IDENTITIES = 1_000;

const DAY_MS = 24 * 60 * 60_000;
/** An identity's lifetime is drawn uniformly from this range. */
export const IDENTITY_LIFETIME_MS = { min: 1 * DAY_MS, max: 14 * DAY_MS } as const;

/** The auditor's user: an issuer no sign-in can have (an OIDC issuer is an https URL), so no person is it. */
export const AUDITOR_USER: UserClaims = { issuer: "svc:auditor", subject: "svc-auditor", email: null, name: "svc-auditor" };
/** Each identity's key name, as `svc-gateway keys list` shows it. */
const KEY_NAME = "audit identity";

/** The store's part the pool uses: the user, its keys, and revoking them. */
export type IdentityStore = Pick<KeyStore, "upsertUser" | "createKey" | "listKeys" | "revokeAnyKey">;

interface Identity {
  keyId: string;
  retiresAt: number;
}

export class AuditIdentities {
  private readonly pool: Identity[] = [];

  private constructor(
    private readonly store: IdentityStore,
    private readonly userId: number,
    private readonly size: number,
    private readonly dice: Dice,
  ) {}

  /**
   * The pool of `size` identities under the auditor's user. Live keys left from an earlier run are kept, each for a
   * lifetime drawn afresh from its creation (so a restart never lengthens one past 14 days); past it they retire.
   */
  static async open(store: IdentityStore, size: number, dice: Dice): Promise<AuditIdentities> {
    const userId = await store.upsertUser(AUDITOR_USER, dice.now());
    const identities = new AuditIdentities(store, userId, size, dice);
    const live = (await store.listKeys(userId)).filter((k: KeyRecord) => k.revokedAt === null);
    for (const key of live) {
      const retiresAt = key.createdAt + identities.lifetime();
      if (identities.pool.length < size && retiresAt > dice.now()) identities.pool.push({ keyId: key.id, retiresAt });
      else await store.revokeAnyKey(key.id, dice.now());
    }
    await identities.refill();
    return identities;
  }

  /** One pick at a time, so two audits at once never both refill the pool. */
  private turn: Promise<unknown> = Promise.resolve();

  /** The principal an audit is sent as: one identity of the pool, at random, once those past their lifetime are replaced. */
  pick(): Promise<Principal> {
    const picked = this.turn.then(() => this.pickNow());
    this.turn = picked.catch(() => undefined);
    return picked;
  }

  private async pickNow(): Promise<Principal> {
    const now = this.dice.now();
    for (let i = this.pool.length - 1; i >= 0; i--) {
      if (this.pool[i]!.retiresAt > now) continue;
      await this.store.revokeAnyKey(this.pool[i]!.keyId, now);
      this.pool.splice(i, 1);
    }
    await this.refill();
    const identity = this.pool[Math.floor(this.dice.random() * this.pool.length)];
    if (identity === undefined) throw new Error("no audit identity: the svc-auditor user's live keys are at the cap and none can be taken or retired");
    return { kind: "user", keyId: identity.keyId, userId: this.userId };
  }

  /**
   * Retires `keyId` at once (revoked, a fresh key in its place): an audit sent under it failed, and the failure's
   * evidence, public, carries the request's cache owner and scope, HMACs of this key's id; kept, a provider reading
   * the evidence would know the audits sent under it from then on.
   */
  retire(keyId: string): Promise<void> {
    const retired = this.turn.then(() => this.retireNow(keyId));
    this.turn = retired.catch(() => undefined);
    return retired;
  }

  private async retireNow(keyId: string): Promise<void> {
    const at = this.pool.findIndex((i) => i.keyId === keyId);
    if (at >= 0) this.pool.splice(at, 1);
    await this.store.revokeAnyKey(keyId, this.dice.now());
    await this.refill();
  }

  /** The key ids in the pool now (for tests and logs: never a secret). */
  keyIds(): string[] {
    return this.pool.map((i) => i.keyId);
  }

  private async refill(): Promise<void> {
    while (this.pool.length < this.size) {
      const now = this.dice.now();
      try {
        // no one ever holds the secret: the auditor acts as the key's owner inside the gateway, by its id
        const { key } = await this.store.createKey(this.userId, KEY_NAME, now, this.size);
        this.pool.push({ keyId: key.id, retiresAt: now + this.lifetime() });
      } catch (err) {
        if (!(err instanceof KeyCapReached)) throw err;
        // another replica on the same store filled the user's keys first: share its identities
        if (!(await this.adopt())) return;
      }
    }
  }

  /**
   * Takes into the pool a live key of the user it does not hold yet, or else retires one such key past its lifetime
   * (which frees a place under the cap, as `open` does); false when there is neither.
   */
  private async adopt(): Promise<boolean> {
    const held = new Set(this.keyIds());
    const now = this.dice.now();
    let stale: string | undefined;
    for (const key of await this.store.listKeys(this.userId)) {
      if (key.revokedAt !== null || held.has(key.id)) continue;
      const retiresAt = key.createdAt + this.lifetime();
      if (retiresAt <= now) {
        stale ??= key.id;
        continue;
      }
      this.pool.push({ keyId: key.id, retiresAt });
      return true;
    }
    if (stale === undefined) return false;
    // another replica's key it has not retired yet (that replica idle): retired here, so refill can create one
    await this.store.revokeAnyKey(stale, now);
    return true;
  }

  private lifetime(): number {
    return IDENTITY_LIFETIME_MS.min + this.dice.random() * (IDENTITY_LIFETIME_MS.max - IDENTITY_LIFETIME_MS.min);
  }
}
