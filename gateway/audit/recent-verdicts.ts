// Each provider's last audit verdicts, for the sequential rule (src/audit/thresholds.ts `sequentialVerdict`): enough
// suspects among a provider's last audits is a fail. In memory, per gateway, bounded in providers and in verdicts each.
import { SUSPECT_WINDOW, sequentialVerdict, type AuditVerdict } from "../../src/audit/thresholds.ts";
import { BoundedMap } from "../../src/bounded-map.ts";

/** How many providers' verdicts are kept: past it the one audited longest ago is forgotten. */
const MAX_PROVIDERS = 10_000;

export class RecentVerdicts {
  private readonly recent = new BoundedMap<string, AuditVerdict[]>(MAX_PROVIDERS);

  /** Adds `provider`'s audit verdict and returns it under the sequential rule. */
  add(provider: string, verdict: AuditVerdict): AuditVerdict {
    const earlier = this.recent.get(provider) ?? [];
    const ruled = sequentialVerdict(earlier, verdict);
    this.recent.set(provider, [...earlier, ruled].slice(-SUSPECT_WINDOW));
    return ruled;
  }
}
