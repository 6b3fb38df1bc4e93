// Who may join the coordinator. An agent needs an enrollment token the operator issued, or evidence at the
// hardware rung, or the operator's `--open-enrollment`. A gateway needs the shared gateway secret, always: a
// loopback address proves nothing about which local process is asking.
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

export const BAD_TOKEN = "the enrollment token is unknown, revoked or expired; ask the operator for a new one (svc-gateway providers enroll)";
export const NOT_ENROLLED =
  "this coordinator admits a provider with an enrollment token (svc-agent start --token, from svc-gateway providers enroll) or hardware attestation";

/** Why an agent whose evidence earned `rung` may not join, or undefined when it may. */
export function agentRefusal(rung: TrustLevel, enrolled: boolean, openEnrollment: boolean): string | undefined {
  return enrolled || openEnrollment || rung === "hardware" ? undefined : NOT_ENROLLED;
}

/** Why a gateway presenting this Authorization header may not link, or undefined when it may. */
export function gatewayRefusal(policy: AdmissionPolicy, authorization: string | undefined): string | undefined {
  const presented = bearerKey(authorization);
  return presented !== undefined && policy.gatewaySecret.has(presented) ? undefined : "the gateway secret is missing or wrong (--gateway-secret-file, SVC_GATEWAY_SECRET, or DATA_DIR/gateway-secret shared with the coordinator)";
}
