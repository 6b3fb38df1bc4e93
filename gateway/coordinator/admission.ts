// Who may join the coordinator. An agent needs an enrollment token the operator issued, or evidence at the
// hardware rung, or the operator's `--open-enrollment`. A gateway needs the shared gateway secret; without
// one configured, only a coordinator that listens on loopback alone takes gateways at all.
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
  /** `--open-enrollment`: machines with neither a token nor hardware evidence may join too. */
  openEnrollment: boolean;
  /** `--gateway-secret`: what gateways must present. */
  gatewaySecret?: SecretSet;
  /** Whether the coordinator listens on a loopback address only. */
  loopbackOnly: boolean;
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
  if (policy.gatewaySecret === undefined) {
    return policy.loopbackOnly ? undefined : "this coordinator listens beyond loopback and was given no --gateway-secret, so it takes no gateways";
  }
  const presented = bearerKey(authorization);
  return presented !== undefined && policy.gatewaySecret.has(presented) ? undefined : "the gateway secret is missing or wrong (--gateway-secret, SVC_GATEWAY_SECRET)";
}

export function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}
