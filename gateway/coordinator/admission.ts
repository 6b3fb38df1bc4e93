// Who may join the coordinator. An agent needs an enrollment token the operator issued, or evidence at the
// hardware rung, or the operator's `--open-enrollment`, and one enrollment admits one identity at a time. A gateway
// needs the shared gateway secret, always: a loopback address proves nothing about which local process is asking.
import type { TrustLevel } from "../../src/receipt/rungs.ts";
import { bearerKey, SecretSet } from "../http/bearer.ts";

/** An operator-issued enrollment, as the key store reports a live token. */
export interface Enrollment {
  id: string;
  name: string;
}

export interface AdmissionPolicy {
  /** The live enrollment a token stands for; undefined when it is unknown, revoked or expired. */
  enrollment(token: string): Promise<Enrollment | undefined>;
  /** The ids of the enrollments live now: a connected agent whose enrollment leaves this set is disconnected. */
  liveEnrollments(): Promise<ReadonlySet<string>>;
  /** `--open-enrollment`: machines with neither a token nor hardware evidence may join too. */
  openEnrollment: boolean;
  /** `--gateway-secret`, or the one made in the data dir: what gateways must present. */
  gatewaySecret: SecretSet;
}

/** WebSocket close codes an agent sees when it is not admitted. */
export const CLOSE_BAD_TOKEN = 4401;
export const CLOSE_NOT_ENROLLED = 4403;
export const CLOSE_ENROLLMENT_IN_USE = 4409;

export const BAD_TOKEN = "the enrollment token is unknown, revoked or expired; ask the operator for a new one (svc-gateway providers enroll)";
export const NOT_ENROLLED =
  "this coordinator admits a provider with an enrollment token (svc-agent start --token, from svc-gateway providers enroll) or hardware attestation";

/** Why an agent whose evidence earned `rung` may not join, or undefined when it may. */
export function agentRefusal(rung: TrustLevel, enrolled: boolean, openEnrollment: boolean): string | undefined {
  return enrolled || openEnrollment || rung === "hardware" ? undefined : NOT_ENROLLED;
}

/**
 * The enrollment an agent was admitted under, which the coordinator vouches for to the gateways (an opaque
 * reference, never the token): the token's id; with no token, its device at the hardware rung (`serial:` and the
 * serial, which its chain's root vouches for); else, under `--open-enrollment`, nothing but its own key
 * (`provider:` and its id), which a machine can make anew at will.
 */
export function enrollmentRef(providerId: string, enrollment: Enrollment | undefined, serial: string | undefined): string {
  return enrollment?.id ?? (serial === undefined ? `provider:${providerId}` : `serial:${serial}`);
}

/**
 * Why provider `id` may not join under `ref` while `holder` holds it, or undefined when it may. One enrollment admits
 * one identity at a time, and the one connected keeps it: a second machine with a copy of the token cannot push the
 * enrolled one out (and take its traffic), and a machine that made new keys gets in once its old link is gone (a
 * closed one at once, a dead one within the liveness sweep's 9.4 s), as its agent retries.
 */
export function enrollmentInUse(ref: string, holder: string | undefined, id: string): string | undefined {
  if (holder === undefined || holder === id) return undefined;
  return `enrollment ${ref} is in use by provider ${holder}, and one enrollment admits one machine at a time; enroll this machine with a token of its own (svc-gateway providers enroll)`;
}

/** Why a gateway presenting this Authorization header may not link, or undefined when it may. */
export function gatewayRefusal(policy: AdmissionPolicy, authorization: string | undefined): string | undefined {
  const presented = bearerKey(authorization);
  return presented !== undefined && policy.gatewaySecret.has(presented) ? undefined : "the gateway secret is missing or wrong (--gateway-secret-file, SVC_GATEWAY_SECRET, or DATA_DIR/gateway-secret shared with the coordinator)";
}
