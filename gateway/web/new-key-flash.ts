// Holds new keys' secrets between the form post that made them and the page that shows them, for one read
// and a few minutes at most, in memory only: after that page the secrets exist nowhere on the gateway.
const FLASH_TTL_MS = 5 * 60 * 1000;

export interface NewKey {
  name: string;
  secret: string;
}

export class NewKeyFlash {
  /** Per session: keys made in two tabs before either page loaded are both shown, not one lost. */
  private readonly held = new Map<string, { keys: NewKey[]; expires: number }>();

  put(sessionId: string, key: NewKey): void {
    const now = Date.now();
    for (const [id, entry] of this.held) if (entry.expires <= now) this.held.delete(id);
    const keys = this.held.get(sessionId)?.keys ?? [];
    this.held.set(sessionId, { keys: [...keys, key], expires: now + FLASH_TTL_MS });
  }

  /** The session's new keys, once; later reads get none. */
  take(sessionId: string): NewKey[] {
    const entry = this.held.get(sessionId);
    this.held.delete(sessionId);
    return entry === undefined || entry.expires <= Date.now() ? [] : entry.keys;
  }
}
