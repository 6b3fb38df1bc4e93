// Bearer-key checks for every gateway route (SPEC §5): operator keys from SVC_OPERATOR_KEYS (compared in
// constant time), then user keys from the key store, found by the hash of the secret.
import { ApiError } from "../../src/errors.ts";
import { bearerKey, SecretSet } from "../http/bearer.ts";
import { SECRET_PREFIX, secretHash } from "./secret.ts";
import type { KeyOwner } from "./key-store.ts";
import type { UserKeys } from "./user-keys.ts";

export function parseOperatorKeys(env: string | undefined): string[] {
  return (env ?? "")
    .split(",")
    .map((k) => k.trim())
    .filter((k) => k !== "");
}

/** The operator keys from SVC_OPERATOR_KEYS. */
export class OperatorKeys extends SecretSet {}

/**
 * Who a request acts as: an operator, or the user who owns the key. `keyId` names the key for its rate
 * limits; an operator key's is derived from its digest (`op_` + 16 hex), so the key itself is never kept.
 */
export type Principal = { kind: "operator"; keyId: string } | ({ kind: "user" } & KeyOwner);

export class Authenticator {
  constructor(
    private readonly operators: OperatorKeys,
    /** Absent when the gateway keeps no key store. */
    private readonly users?: UserKeys,
  ) {}

  /** Throws SPEC §5's 401 unless the request carries a known key. Never echoes the key. */
  async authenticate(header: string | undefined): Promise<Principal> {
    const key = bearerKey(header);
    if (key === undefined) {
      const why = header === undefined ? "No API key was sent" : "The Authorization header is not a bearer key";
      throw new ApiError("invalid_api_key", `${why}; send Authorization: Bearer <API_KEY>.`);
    }
    if (this.operators.has(key)) return { kind: "operator", keyId: `op_${secretHash(key).slice(0, 16)}` };
    const owner = key.startsWith(SECRET_PREFIX) ? await this.users?.verify(key) : undefined;
    if (owner === undefined) throw new ApiError("invalid_api_key", "The API key is not valid, or it has been revoked.");
    return { kind: "user", ...owner };
  }
}
