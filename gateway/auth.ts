// Bearer-key checks for every gateway route (SPEC §5). Operator keys come from SVC_OPERATOR_KEYS; keys are
// compared as SHA-256 digests with timingSafeEqual, against every key, so timing says nothing about a guess.
import { createHash, timingSafeEqual } from "node:crypto";
import { ApiError } from "../src/errors.ts";

const digest = (key: string): Buffer => createHash("sha256").update(key, "utf8").digest();

export function parseOperatorKeys(env: string | undefined): string[] {
  return (env ?? "")
    .split(",")
    .map((k) => k.trim())
    .filter((k) => k !== "");
}

export class OperatorKeys {
  private readonly digests: Buffer[];

  constructor(keys: readonly string[]) {
    this.digests = keys.map(digest);
  }

  get size(): number {
    return this.digests.length;
  }

  has(key: string): boolean {
    const candidate = digest(key);
    let found = false;
    for (const d of this.digests) found = timingSafeEqual(d, candidate) || found;
    return found;
  }
}

/** The key from `Authorization: Bearer <key>`, or undefined when the header is absent or not a bearer. */
export function bearerKey(header: string | undefined): string | undefined {
  const match = /^Bearer[ ]+(\S+)[ ]*$/i.exec(header ?? "");
  return match?.[1];
}

/** Throws SPEC §5's 401 unless the request carries a known key. Never echoes the key. */
export function authenticate(header: string | undefined, keys: OperatorKeys): void {
  const key = bearerKey(header);
  if (key === undefined) {
    const why = header === undefined ? "No API key was sent" : "The Authorization header is not a bearer key";
    throw new ApiError("invalid_api_key", `${why}; send Authorization: Bearer <API_KEY>.`);
  }
  if (!keys.has(key)) throw new ApiError("invalid_api_key", "The API key is not valid.");
}
