// Claim epochs for coordinators on NATS (gateway/coordinator/claim-epochs.ts) from a PostgreSQL sequence: one
// `nextval` per claim. A sequence is enough, since claims need only an order: its numbers never repeat, a later call
// gets a greater one (to PostgreSQL's maximum, 2^63), and no clock is read. No row per provider: nothing to clean up.
import type { ClaimEpochs } from "../coordinator/claim-epochs.ts";

type Query = (text: string) => Promise<Record<string, unknown>[]>;

export function postgresEpochs(query: Query): ClaimEpochs {
  return {
    next: async () => {
      const [row] = await query("SELECT nextval('svc_claim_epoch') AS epoch");
      return row!.epoch as number;
    },
  };
}
