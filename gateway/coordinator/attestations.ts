// The evidence each connected provider was last granted its rung for, kept beside the registry (which holds
// the rung itself) so gateways can show it: `GET /v1/providers/{id}/attestation`.
import type { AttestationRecord } from "../../src/trust/attestation-record.ts";
import type { AgentPort } from "./registry.ts";

export class Attestations {
  /** Keyed by provider id; `agent` is the link the record came from, as the registry keys its providers. */
  private readonly records = new Map<string, { record: AttestationRecord; agent: AgentPort }>();

  /** A first grant on a link: it replaces whatever an older link of the same provider left. */
  granted(record: AttestationRecord, agent: AgentPort): void {
    this.records.set(record.provider_id, { record, agent });
  }

  /** A re-answered challenge; ignored from a link that a newer connection has replaced. */
  reattested(record: AttestationRecord, agent: AgentPort): void {
    if (this.records.get(record.provider_id)?.agent === agent) this.records.set(record.provider_id, { record, agent });
  }

  /** The link closed: its record goes, unless a newer link of the same provider holds it now. */
  closed(id: string, agent: AgentPort): void {
    if (this.records.get(id)?.agent === agent) this.records.delete(id);
  }

  get(id: string): AttestationRecord | undefined {
    return this.records.get(id)?.record;
  }
}
