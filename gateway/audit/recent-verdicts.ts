// Each provider's last audit verdicts, for the sequential rule (src/audit/thresholds.ts `sequentialVerdict`): enough
// suspects among a provider's last audits is a fail. In memory, per gateway, bounded in providers and in verdicts each.
import { SUSPECT_WINDOW, sequentialVerdict, type AuditVerdict } from "../../src/audit/thresholds.ts";

/** How many providers' verdicts are kept: past it the one audited longest ago is forgotten. */
const MAX_PROVIDERS = 10_000;

export class RecentVerdicts {
  private readonly recent = new Map<string, AuditVerdict[]>();

  /** Adds `provider`'s audit verdict and returns it under the sequential rule. */
  add(provider: string, verdict: AuditVerdict): AuditVerdict {
    const earlier = this.recent.get(provider) ?? [];
    const ruled = sequentialVerdict(earlier, verdict);
    this.recent.delete(provider);
    this.recent.set(provider, [...earlier, ruled].slice(-SUSPECT_WINDOW));
    if (this.recent.size > MAX_PROVIDERS) this.recent.delete(this.recent.keys().next().value!);
    return ruled;
  }
}
