// Bearer credentials as both servers read them: the key from an `Authorization: Bearer` header, and a set
// of secrets checked in constant time (SHA-256 digests, every one compared), so timing says nothing of a guess.
import { createHash, timingSafeEqual } from "node:crypto";

const digest = (secret: string): Buffer => createHash("sha256").update(secret, "utf8").digest();

/** The key from `Authorization: Bearer <key>`, or undefined when the header is absent or not a bearer. */
export function bearerKey(header: string | undefined): string | undefined {
  const match = /^Bearer[ ]+(\S+)[ ]*$/i.exec(header ?? "");
  return match?.[1];
}

export class SecretSet {
  private readonly digests: Buffer[];

  constructor(secrets: readonly string[]) {
    this.digests = secrets.map(digest);
  }

  get size(): number {
    return this.digests.length;
  }

  has(candidate: string): boolean {
    const d = digest(candidate);
    let found = false;
    for (const known of this.digests) found = timingSafeEqual(known, d) || found;
    return found;
  }
}
