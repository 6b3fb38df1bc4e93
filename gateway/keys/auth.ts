// Bearer-key checks for every gateway route (SPEC §5): operator keys from SVC_OPERATOR_KEYS, then user keys
// from the key store. Operator keys are compared as SHA-256 digests with timingSafeEqual against every key,
// so timing says nothing about a guess; user keys are found by the hash of the secret.
import { createHash, timingSafeEqual } from "node:crypto";
import { ApiError } from "../../src/errors.ts";
import { SECRET_PREFIX, secretHash } from "./secret.ts";
import type { KeyOwner } from "./key-store.ts";
import type { UserKeys } from "./user-keys.ts";

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

/**
 * Who a request acts as: an operator, or the user who owns the key. `keyId` names the key for its rate
 * limits; an operator key's is derived from its digest (`op_` + 16 hex), so the key itself is never kept.
 */
export type Principal = { kind: "operator"; keyId: string } | ({ kind: "user" } & KeyOwner);

/** The key from `Authorization: Bearer <key>`, or undefined when the header is absent or not a bearer. */
export function bearerKey(header: string | undefined): string | undefined {
  const match = /^Bearer[ ]+(\S+)[ ]*$/i.exec(header ?? "");
  return match?.[1];
}

export class Authenticator {
  constructor(
    private readonly operators: OperatorKeys,
    /** Absent when the gateway keeps no key store. */
    private readonly users?: UserKeys,
  ) {}

  /** Throws SPEC §5's 401 unless the request carries a known key. Never echoes the key. */
  authenticate(header: string | undefined): Principal {
    const key = bearerKey(header);
    if (key === undefined) {
      const why = header === undefined ? "No API key was sent" : "The Authorization header is not a bearer key";
      throw new ApiError("invalid_api_key", `${why}; send Authorization: Bearer <API_KEY>.`);
    }
    if (this.operators.has(key)) return { kind: "operator", keyId: `op_${secretHash(key).slice(0, 16)}` };
    const owner = key.startsWith(SECRET_PREFIX) ? this.users?.verify(key) : undefined;
    if (owner === undefined) throw new ApiError("invalid_api_key", "The API key is not valid, or it has been revoked.");
    return { kind: "user", ...owner };
  }
}
