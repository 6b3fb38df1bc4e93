// The evidence each connected provider was last granted its rung for, kept beside the registry (which holds the rung
// itself and the evidence's digest) so gateways can check it themselves and show it: `GET /v1/providers/{id}/attestation`.
import type { Evidence } from "../../src/trust/attestation.ts";
import type { AgentPort } from "./registry.ts";

export class Attestations {
  /** Keyed by provider id; `agent` is the link the evidence came from, as the registry keys its providers. */
  private readonly evidence = new Map<string, { evidence: Evidence; agent: AgentPort }>();

  /** A first grant on a link: it replaces whatever an older link of the same provider left. */
  granted(id: string, evidence: Evidence, agent: AgentPort): void {
    this.evidence.set(id, { evidence, agent });
  }

  /** A re-answered challenge; ignored from a link that a newer connection has replaced. */
  reattested(id: string, evidence: Evidence, agent: AgentPort): void {
    if (this.evidence.get(id)?.agent === agent) this.evidence.set(id, { evidence, agent });
  }

  /** The link closed: its evidence goes, unless a newer link of the same provider holds it now. */
  closed(id: string, agent: AgentPort): void {
    if (this.evidence.get(id)?.agent === agent) this.evidence.delete(id);
  }

  get(id: string): Evidence | undefined {
    return this.evidence.get(id)?.evidence;
  }
}
