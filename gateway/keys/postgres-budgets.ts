// The shared per-minute budgets on PostgreSQL: one lease is one call of `svc_lease` (postgres-schema.ts), which
// refills the key's or user's bucket on the database's clock, settles a debt and grants a slice in one statement.
import { randomUUID } from "node:crypto";
import { MINUTE_MS, type LeaseGrant, type LeaseSource } from "./budget-lease.ts";

type Query = (text: string, params: unknown[]) => Promise<Record<string, unknown>[]>;

export class PostgresBudgets implements LeaseSource {
  /** This gateway process, as the lessees table counts it. */
  private readonly gateway = randomUUID();

  constructor(private readonly query: Query) {}

  async lease(scope: string, kind: "rpm" | "tpm", capacity: number, owe: number, want: number): Promise<LeaseGrant> {
    const [row] = await this.query("SELECT granted, level_after, gateways FROM svc_lease($1, $2, $3, $4, $5, $6, $7)", [
      this.gateway, scope, kind, capacity, MINUTE_MS, owe, want,
    ]);
    return { granted: Number(row!.granted), level: Number(row!.level_after), gateways: Number(row!.gateways) };
  }
}
