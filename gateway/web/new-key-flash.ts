// Holds a new key's secret between the form post that made it and the page that shows it, for one read and
// a few minutes at most, in memory only: after that page the secret exists nowhere on the gateway.
const FLASH_TTL_MS = 5 * 60 * 1000;

export interface NewKey {
  name: string;
  secret: string;
}

export class NewKeyFlash {
  private readonly held = new Map<string, NewKey & { expires: number }>();

  put(sessionId: string, key: NewKey): void {
    const now = Date.now();
    for (const [id, entry] of this.held) if (entry.expires <= now) this.held.delete(id);
    this.held.set(sessionId, { ...key, expires: now + FLASH_TTL_MS });
  }

  /** The session's new key, once; later reads get nothing. */
  take(sessionId: string): NewKey | undefined {
    const entry = this.held.get(sessionId);
    this.held.delete(sessionId);
    if (entry === undefined || entry.expires <= Date.now()) return undefined;
    return { name: entry.name, secret: entry.secret };
  }
}
