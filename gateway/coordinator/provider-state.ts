// What the coordinator's registry keeps per provider and per session, the ports it talks through, and how a
// provider reads to routing, to the listing and to the gateways' copies of the directory.
import type { TrustLevel } from "../../src/receipt/rungs.ts";
import type { DirectoryEntry, PlacedRequest, ProviderEntry, ToGateway } from "../../src/wire/gateway.ts";
import type { ToAgent } from "../../src/wire/agent.ts";
import { UNKNOWN_SERVICE_MS } from "./queue-limits.ts";

export interface AgentPort {
  send(message: ToAgent): void;
  /** Ends the link (the provider is leaving the directory). */
  close(reason: string): void;
  /**
   * The provider was given a session (true), or has none running any more (false): its link watches it at the
   * busy heartbeat rate while it works, so a stream's failure is reported within the SPEC's bound.
   */
  busy?(on: boolean): void;
}
/**
 * A session's sealed request: the gateway's (`whole` asks the agent for the answer in one frame: a non-stream
 * caller), or a gateway-blind caller's own with its gateway's cache scope (DESIGN §10), relayed as they came.
 */
export type Sealed = { enc: string; ct: string; whole?: true } | Extract<PlacedRequest, { blind: unknown }>;

export interface GatewayPort {
  send(message: ToGateway): void;
}

export interface Session {
  id: string;
  alias: string;
  gateway: GatewayPort;
  sealed: Sealed;
  /** A frame of its answer has gone to the gateway: from then on it cannot be run elsewhere. */
  relayed?: true;
  /** Sealed answer bytes it may relay (the placement's `max_bytes`), and those relayed so far. */
  maxBytes: number;
  relayedBytes: number;
  /** The queue's longest wait. */
  deadline?: NodeJS.Timeout;
}

export interface ProviderInfo {
  id: string;
  name?: string;
  trust: TrustLevel;
  serial?: string;
  /** The enrollment it was admitted under (admission.ts's enrollmentRef); none: its own id. */
  enrollment?: string;
  signingKey: string;
  sealingKey: string;
  /** The SHA-256 of the evidence it was last granted its rung for (src/trust/attestation.ts evidenceDigest): gateways check that evidence themselves. */
  evidence: string;
}

export interface Provider extends ProviderInfo {
  agent: AgentPort;
  model_ids: string[];
  /** When it was last given a session (routing's least-recently-used tie-break). */
  lastAssigned: number;
  /** The session the agent is running (busy until the agent says it ended). */
  active?: Session;
  queue: Session[];
  /** The agent said it is leaving: no new sessions, out of the listing; its running session may finish. */
  leaving: boolean;
  /** When the running session started, and the moving average of how long sessions take here (ms). */
  startedAt: number;
  serviceMs?: number;
}

/** Routing's load: the running session and the queue in front of the provider. */
export const load = (p: Provider): number => (p.active ? 1 : 0) + p.queue.length;

/** The record chooseProvider reads, for a pinned request's few candidates. */
export const routable = (p: Provider) => ({ ...toEntry(p), lastAssigned: p.lastAssigned });

export function toDirectoryEntry(p: Provider): DirectoryEntry {
  return { ...toEntry(p), last_assigned: p.lastAssigned, evidence_sha256: p.evidence, ...(p.enrollment === undefined ? {} : { enrollment: p.enrollment }) };
}

export function toEntry(p: Provider): ProviderEntry {
  return {
    id: p.id,
    model_ids: [...p.model_ids],
    trust: p.trust,
    busy: p.active !== undefined,
    waiting: p.queue.length,
    ...(p.serial === undefined ? {} : { serial: p.serial }),
    signing_key: p.signingKey,
    sealing_key: p.sealingKey,
  };
}

/** A slot frees when a running session ends: about one service time away. */
export function retryAfterOf(provider: Provider): number {
  return (provider.serviceMs ?? UNKNOWN_SERVICE_MS) / 1000;
}
