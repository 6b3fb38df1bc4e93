// Which KeyStore a command uses: PostgreSQL when `--database URL` (or SVC_DATABASE_URL) names one, else the SQLite
// file under --data-dir. A database that is not a postgres:// URL, or that cannot be reached, is one line naming
// --database and exit code 2, before anything listens.
import { USAGE_EXIT } from "../../src/process/cli-options.ts";
import { makePrivateDataDir } from "./private-files.ts";
import type { KeyStore } from "./key-store.ts";
import { SqliteKeyStore } from "./sqlite-store.ts";

/** Where the key store lives: `database` wins over `dataDir`. */
export interface StoreLocation {
  dataDir: string;
  database?: string;
}

/** Exit code 2: the shared state the command was pointed at is wrong or away (not a usage error, not a crash). */
export class StoreUnreachable extends Error {
  readonly exitCode = 2;
}

/** `postgres://user:secret@host/db` with the password hidden: what an error line may show. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== "") parsed.password = "***";
    return parsed.href;
  } catch {
    return "(not a URL)";
  }
}

/** A coordinator on NATS (`serve --nats` with its coordinator, `coordinator --nats`) settles which coordinator holds a
 * provider by epochs from the shared database (gateway/coordinator/claim-epochs.ts): without --database it cannot. */
export function checkNatsDatabase(where: StoreLocation): void {
  if (where.database !== undefined) return;
  throw Object.assign(
    new Error("--nats: a coordinator on NATS needs --database postgres://… (the shared database orders which coordinator holds a provider); a gateway alone takes --no-coordinator"),
    { exitCode: USAGE_EXIT },
  );
}

/** Opens (creating, for SQLite) the store; `onError` hears a PostgreSQL connection dropped while idle. */
export async function openKeyStore(where: StoreLocation, onError?: (err: Error) => void): Promise<KeyStore> {
  if (where.database === undefined) {
    makePrivateDataDir(where.dataDir, (line) => console.error(`svc-gateway: ${line}`));
    return SqliteKeyStore.open(where.dataDir);
  }
  const url = where.database;
  if (!URL.canParse(url) || !/^postgres(ql)?:$/.test(new URL(url).protocol)) {
    throw new StoreUnreachable(`--database ${redactUrl(url)}: expected a postgres:// or postgresql:// URL`);
  }
  const { PostgresKeyStore } = await import("./postgres-store.ts");
  try {
    return await PostgresKeyStore.open(url, onError);
  } catch (err) {
    const why = (err as Error).message.split("\n")[0] || (err as { code?: string }).code || "connection failed";
    throw new StoreUnreachable(`--database ${redactUrl(url)}: cannot open the key store: ${why}`);
  }
}
