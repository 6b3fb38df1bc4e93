// The one way a gateway or coordinator connects to NATS (`--nats URL[,URL]`): reconnecting for ever once connected,
// and a first connection that fails is a one-line error naming the flag, exit code 2. Access is what
// @nats-io/transport-node supports itself: a user and password or a token in the URL, a creds file (JWT and NKey
// seed), and TLS with the operator's CA and, for servers that verify clients, a client certificate. No secret is
// ever printed: the servers are shown as `redactNats` gives them.
import { readFileSync } from "node:fs";
import { connect, credsAuthenticator, type ConnectionOptions, type NatsConnection } from "@nats-io/transport-node";

/** A start-up failure that exits 2 (src/process/cli-options.ts): the service it needs is unreachable or misnamed. */
const unavailable = (message: string): Error => Object.assign(new Error(message), { exitCode: 2 });

/** `--nats-creds` and the TLS files: paths, read at connect. */
export interface NatsAccess {
  creds?: string;
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
}

/** One server: its URL without credentials, and the user and password, or the token, it carried. */
interface Server {
  url: string;
  user?: string;
  pass?: string;
}

function parseServers(urls: string): Server[] {
  const servers = urls.split(",").map((s) => s.trim()).filter((s) => s.length > 0);
  if (servers.length === 0) throw unavailable("--nats: no server URL given");
  return servers.map((s) => {
    const parsed = URL.canParse(s) ? new URL(s) : undefined;
    if (parsed === undefined || !/^(nats|tls):$/.test(parsed.protocol) || parsed.hostname === "" || !/^\/?$/.test(parsed.pathname) || parsed.search !== "" || parsed.hash !== "") {
      throw unavailable(`--nats: ${redactNats(s)} is not a nats://host:port URL`);
    }
    const url = `${parsed.protocol}//${parsed.host}`;
    if (parsed.username === "") return { url };
    return { url, user: decodeURIComponent(parsed.username), pass: parsed.password === "" ? undefined : decodeURIComponent(parsed.password) };
  });
}

/** `--nats` as it may be shown: each server's URL without its user, password or token. */
export function redactNats(urls: string): string {
  return urls
    .split(",")
    .map((s) => s.trim().replace(/^([a-z]+:\/\/)[^@/]*@/i, "$1"))
    .filter((s) => s.length > 0)
    .join(",");
}

const readable = (flag: string, path: string): string => {
  try {
    readFileSync(path);
    return path;
  } catch (err) {
    throw unavailable(`${flag} ${path}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
};

/** The client's options for these servers and files: credentials from the URLs (all alike) or the creds file, and TLS. */
function accessOptions(servers: Server[], access: NatsAccess): Partial<ConnectionOptions> {
  const options: Partial<ConnectionOptions> = {};
  const named = servers.filter((s) => s.user !== undefined);
  if (named.some((s) => s.user !== named[0]!.user || s.pass !== named[0]!.pass) || (named.length > 0 && named.length < servers.length)) {
    throw unavailable("--nats: give every server the same credentials (or none, with --nats-creds)");
  }
  const first = named[0];
  if (first !== undefined && access.creds !== undefined) throw unavailable("--nats-creds: give credentials in the --nats URLs or a creds file, not both");
  if (first?.pass !== undefined) Object.assign(options, { user: first.user, pass: first.pass });
  else if (first !== undefined) options.token = first.user;
  if (access.creds !== undefined) {
    const creds = readFileSync(readable("--nats-creds", access.creds));
    options.authenticator = credsAuthenticator(new Uint8Array(creds));
  }
  if ((access.tlsCert === undefined) !== (access.tlsKey === undefined)) throw unavailable("--nats-tls-cert: a client certificate needs its key, --nats-tls-key FILE (and the other way round)");
  const tls = servers.some((s) => s.url.startsWith("tls:")) || access.tlsCa !== undefined || access.tlsCert !== undefined;
  if (tls) {
    options.tls = {
      ...(access.tlsCa === undefined ? {} : { caFile: readable("--nats-tls-ca", access.tlsCa) }),
      ...(access.tlsCert === undefined ? {} : { certFile: readable("--nats-tls-cert", access.tlsCert), keyFile: readable("--nats-tls-key", access.tlsKey!) }),
    };
  }
  return options;
}

/** Connects to the NATS servers `urls` (comma-separated, as `--nats` takes them). */
export async function connectNats(urls: string, name: string, access: NatsAccess = {}): Promise<NatsConnection> {
  const servers = parseServers(urls);
  const options = accessOptions(servers, access);
  const shown = servers.map((s) => s.url).join(",");
  try {
    return await connect({
      servers: servers.map((s) => s.url.replace(/^tls:/, "nats:")),
      name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      timeout: 5_000,
      pingInterval: 5_000,
      maxPingOut: 2,
      ...options,
    });
  } catch (err) {
    const why = (err as Error).message;
    const hint = /authori[sz]ation|authentication|permission/i.test(why) ? "; give credentials in the URL (nats://user:password@host:port, or a token: nats://token@host:port) or --nats-creds FILE" : "";
    throw unavailable(`--nats: cannot reach ${shown} (${why})${hint}`);
  }
}
