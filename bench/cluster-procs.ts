// The cluster section's processes: a throwaway PostgreSQL and a three-node nats-server cluster (the harness's, as the
// replica tests start them), two `svc-gateway coordinator --nats --database` and two `serve --no-coordinator --nats
// --database` on them (trusting the coordinators' directory keys); and, to compare against, one `serve` with its
// embedded coordinator on SQLite.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { directoryKey } from "../gateway/coordinator/directory-key.ts";
import { startNatsCluster, natsMissing, type NatsCluster } from "../harness/nats.ts";
import { postgresMissing, startPostgres, type Postgres } from "../harness/postgres.ts";
import type { Proc, Usage } from "../harness/process.ts";
import type { WrittenTinyCatalog } from "../tiny-model/catalog.ts";
import { startCoordinator, startGateway } from "./procs.ts";
import type { Measurable } from "./rounds.ts";

export interface ClusterProcs {
  postgres: Postgres;
  nats: NatsCluster;
  gateways: { proc: Proc; url: string }[];
  coordinators: { proc: Proc; url: string }[];
  embedded: { proc: Proc; url: string; coordinatorUrl: string };
  stop(): Promise<void>;
}

/** Why the section cannot run here (one line), or undefined. */
export function clusterMissing(): string | undefined {
  return postgresMissing() ?? natsMissing();
}

/** Several processes read as one: their CPU and resident memory summed. */
export function summed(parts: Measurable[]): Measurable {
  return {
    usage: () =>
      parts.map((p) => p.usage()).reduce<Usage>((a, u) => ({ rssMb: a.rssMb + u.rssMb, peakMb: a.peakMb + u.peakMb, cpuMs: a.cpuMs + u.cpuMs }), { rssMb: 0, peakMb: 0, cpuMs: 0 }),
  };
}

export async function startClusterProcs(dir: string, tiny: WrittenTinyCatalog): Promise<ClusterProcs> {
  const stops: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch((err: Error) => console.error(`cluster: stopping: ${err.message}`));
  };
  try {
    const [postgres, nats] = await Promise.all([startPostgres(), startNatsCluster(3)]);
    stops.push(() => postgres.stop(), () => nats.stop());
    const database = await postgres.freshDatabase();
    const shared = ["--nats", nats.urls, "--database", database];
    // started together, as replicas would be: the migrations run once, under PostgreSQL's advisory lock
    const coordinators = await Promise.all([1, 2].map((i) => startCoordinator(dir, tiny.catalogPath, `cluster-coordinator-${i}`, shared)));
    stops.push(...coordinators.map((c) => () => c.proc.stop()));
    // the keys the coordinators made in their data dirs, which the gateways take their messages under
    const keys = join(dir, "coordinator-keys");
    writeFileSync(keys, coordinators.map((c) => `${directoryKey(c.dataDir).publicKey}\n`).join(""));
    const gateways = await Promise.all(
      [1, 2].map((i) => startGateway(dir, { catalogPath: tiny.catalogPath, name: `cluster-gateway-${i}`, args: ["--no-coordinator", "--coordinator-keys", keys, ...shared] })),
    );
    stops.push(...gateways.map((g) => () => g.proc.stop()));
    const embedded = await startGateway(dir, { catalogPath: tiny.catalogPath, name: "cluster-embedded-gateway" });
    stops.push(() => embedded.proc.stop());
    return { postgres, nats, gateways, coordinators, embedded, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
