// The one way a gateway or coordinator connects to NATS (`--nats URL[,URL]`): reconnecting for ever once connected,
// and a first connection that fails is a one-line error naming the flag, exit code 2.
import { connect, type NatsConnection } from "@nats-io/transport-node";

/** A start-up failure that exits 2 (src/process/cli-options.ts): the service it needs is unreachable or misnamed. */
const unavailable = (message: string): Error => Object.assign(new Error(message), { exitCode: 2 });

/** Connects to the NATS servers `urls` (comma-separated, as `--nats` takes them). */
export async function connectNats(urls: string, name: string): Promise<NatsConnection> {
  const servers = urls.split(",").map((s) => s.trim()).filter((s) => s.length > 0);
  for (const s of servers) {
    if (!/^nats:\/\/[^/\s@]+\/?$/.test(s)) throw unavailable(`--nats: ${s} is not a nats://host:port URL`);
  }
  if (servers.length === 0) throw unavailable("--nats: no server URL given");
  try {
    return await connect({ servers, name, maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: 5_000, pingInterval: 5_000, maxPingOut: 2 });
  } catch (err) {
    throw unavailable(`--nats: cannot reach ${servers.join(",")} (${(err as Error).message})`);
  }
}
