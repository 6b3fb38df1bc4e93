// One agent's WebSocket at the coordinator: challenge it with a fresh nonce on connect and every few
// minutes, grant the rung its evidence earns (or refuse it, with the reason), then relay its sealed frames.
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import { WebSocket } from "ws";
import { evidenceDigest, verifyEvidence, type Evidence, type TrustAnchors } from "../../src/trust/attestation.ts";
import { allowanceMs, idleHeartbeatMs } from "../../src/link/heartbeat.ts";
import type { LivenessSweep } from "./liveness-sweep.ts";
import type { EnrollmentWatch } from "./enrollment-watch.ts";
import type { ConnectionLog } from "./connection-log.ts";
import { providerIdOf } from "../../src/receipt/provider-id.ts";
import { jsonSender } from "../../src/link/ws-send.ts";
import { FromAgentSchema, parseMessage, type ToAgent } from "../../src/wire/agent.ts";
import { agentRefusal, BAD_TOKEN, CLOSE_BAD_TOKEN, CLOSE_ENROLLMENT_IN_USE, CLOSE_NOT_ENROLLED, enrollmentInUse, enrollmentRef, type AdmissionPolicy } from "./admission.ts";
import type { Attestations } from "./attestations.ts";
import type { AgentPort, Registry } from "./registry.ts";

export interface AgentLinkOptions {
  registry: Registry;
  /** Where the evidence behind each grant is kept for gateways to check and show. */
  attestations: Attestations;
  anchors: TrustAnchors;
  admission: AdmissionPolicy;
  log: Logger;
  /** The busy heartbeat interval (agents beat IDLE_HEARTBEAT_FACTOR times less often while idle). */
  heartbeatMs: number;
  /** The coordinator's one watch over all its links. */
  sweep: LivenessSweep;
  /** Ends an enrolled agent's stay within seconds of its token's revocation. */
  enrollments: EnrollmentWatch;
  /** How often a connected agent must answer a fresh challenge. */
  rechallengeMs: number;
  /** Where lines about agents not yet granted go: a few per interval, the rest counted. */
  connections: ConnectionLog;
  /** Called at the first grant: the connection has proved itself (connection-gate.ts). */
  proven: () => void;
}

/** `token` is the enrollment token the agent presented on its upgrade, if any. */
export function acceptAgent(ws: WebSocket, remote: string, token: string | undefined, options: AgentLinkOptions): void {
  const { registry, attestations, anchors, heartbeatMs } = options;
  let log = options.log.child({ agent: remote });
  let outstanding: string | undefined;
  let answerTimer: NodeJS.Timeout | undefined;
  let provider: { id: string; signingKey: string; sealingKey: string } | undefined;
  let unwatch: (() => void) | undefined;
  const port: AgentPort = {
    send: jsonSender<ToAgent>(ws),
    close: (reason: string) => {
      log.warn({ reason }, "agent replaced");
      ws.close(4000, reason);
    },
    busy: (on) => liveness.allow(on ? busyAllowance : idleAllowance),
  };

  /** A granted agent's lines are the operator's to read; a stranger's are rationed (connection-log.ts). */
  const warn = (fields: Record<string, unknown>, msg: string) => (provider ? log.warn(fields, msg) : options.connections.detail({ agent: remote, ...fields }, msg));
  const drop = (why: string) => {
    warn({ why }, "agent dropped");
    ws.terminate();
  };
  // a busy agent beats at the busy rate, so its stream's failure is reported within SPEC time; an idle one at
  // the idle rate. The sweep counts a newly busy agent's silence at the busy allowance from that moment
  const busyAllowance = allowanceMs(heartbeatMs);
  const idleAllowance = allowanceMs(idleHeartbeatMs(heartbeatMs));
  const liveness = options.sweep.watch(ws, { allowanceMs: idleAllowance, onDead: () => drop("missed heartbeat") });
  const challenge = () => {
    outstanding = randomBytes(32).toString("hex");
    port.send({ t: "challenge", nonce: outstanding });
    clearTimeout(answerTimer);
    answerTimer = setTimeout(() => drop("no answer to the challenge in time"), Math.max(10_000, heartbeatMs * 2));
  };

  const answer = async (evidence: Evidence) => {
    clearTimeout(answerTimer);
    const nonce = outstanding;
    outstanding = undefined; // a nonce is answered once; a second answer to it is a replay
    const grant =
      nonce === undefined
        ? { ok: false as const, reason: "evidence arrived with no challenge outstanding (replayed)" }
        : await verifyEvidence(evidence, nonce, anchors);
    if (!grant.ok) return refuse(grant.reason);
    // checked on every answer, so a revoked token ends the agent's stay at its next challenge
    const enrollment = token === undefined ? undefined : await options.admission.enrollment(token);
    if (token !== undefined && enrollment === undefined) return refuse(BAD_TOKEN, CLOSE_BAD_TOKEN, "invalid enrollment token");
    const notAdmitted = agentRefusal(grant.rung, enrollment !== undefined, options.admission.openEnrollment);
    if (notAdmitted !== undefined) return refuse(notAdmitted, CLOSE_NOT_ENROLLED, "not enrolled");
    if (provider && (provider.signingKey !== evidence.signing_key || provider.sealingKey !== evidence.sealing_key)) {
      return refuse("the keys changed on a live connection");
    }
    const id = providerIdOf(evidence.signing_key);
    const serial = grant.rung === "hardware" ? grant.serial : undefined;
    const digest = evidenceDigest(evidence);
    if (provider) {
      registry.setTrust(id, grant.rung, serial, digest);
      attestations.reattested(id, evidence, port);
      log.info({ rung: grant.rung, refusals: grant.refusals }, "agent re-attested");
    } else {
      // checked and taken in one turn, so two connections on one enrollment cannot both pass
      const ref = enrollmentRef(id, enrollment, serial);
      const inUse = enrollmentInUse(ref, registry.holderOf(ref), id);
      if (inUse !== undefined) return refuse(inUse, CLOSE_ENROLLMENT_IN_USE, "enrollment in use");
      provider = { id, signingKey: evidence.signing_key, sealingKey: evidence.sealing_key };
      log = log.child({ provider: id });
      const name = evidence.name;
      registry.add({ id, trust: grant.rung, serial, name, enrollment: ref, signingKey: evidence.signing_key, sealingKey: evidence.sealing_key, evidence: digest }, port);
      attestations.granted(id, evidence, port);
      log.info({ rung: grant.rung, serial, name, refusals: grant.refusals, enrollment: ref }, "agent granted");
      options.proven();
      if (enrollment !== undefined) unwatch = options.enrollments.watch(enrollment.id, () => revoked(enrollment.id));
    }
    port.send({ t: "granted", rung: grant.rung, provider_id: id, ...(serial === undefined ? {} : { serial }), refusals: grant.refusals });
  };

  /** Its token was revoked (or expired) while it was connected: out of the directory now, then the link closes. */
  const revoked = (enrollment: string) => {
    if (provider) {
      registry.remove(provider.id, "the provider's enrollment was revoked", port);
      attestations.closed(provider.id, port);
    }
    log.warn({ enrollment }, "agent's enrollment revoked");
    refuse(BAD_TOKEN, CLOSE_BAD_TOKEN, "invalid enrollment token");
    // an agent that never answers the close frame must not hold its socket for ws's 30 s
    setTimeout(() => ws.terminate(), 2_000).unref();
  };

  /** The reason travels in a message first: a close frame's reason holds only 123 bytes. */
  const refuse = (reason: string, code = 4003, closeReason = "attestation refused") => {
    warn({ reason }, "agent refused");
    port.send({ t: "refused", reason });
    ws.close(code, closeReason);
  };

  ws.on("message", (data) => {
    const message = parseMessage(FromAgentSchema, data);
    if (!message) return drop("sent a frame that is not a valid agent message");
    if (message.t === "evidence") return void answer(message.evidence).catch((err: Error) => drop(`evidence check failed: ${err.message}`));
    if (!provider) return drop(`sent ${message.t} before it was granted a rung`);
    if (message.t === "advertise") {
      const dropped = registry.advertise(provider.id, message.aliases);
      log.info({ aliases: message.aliases, not_in_catalog: dropped }, "agent advertising");
    } else if (message.t === "leaving") {
      registry.leave(provider.id);
      log.info("agent leaving");
    } else if (message.t === "frame") {
      const { t: _t, id, data, ...clear } = message;
      registry.frame(provider.id, id, data, clear);
    } else registry.end(provider.id, message.id, message.error, message.code);
  });
  // oversized frames (ws closes with 1009) and protocol garbage land here: that agent goes, the rest stay
  ws.on("error", (err) => drop(`link error: ${err.message}`));
  const rechallenge = setInterval(challenge, options.rechallengeMs);
  ws.on("close", (code) => {
    liveness.stop();
    unwatch?.();
    clearInterval(rechallenge);
    clearTimeout(answerTimer);
    // a stranger's connection is counted by the gate, not written line by line
    if (provider) {
      registry.remove(provider.id, "the provider disconnected", port);
      attestations.closed(provider.id, port);
      log.info({ code }, "agent disconnected");
    }
  });
  challenge();
}
