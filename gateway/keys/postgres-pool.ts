// The PostgreSQL key store's connection (postgres-store.ts): a pool that opens and migrates, BIGINTs read as numbers,
// and statements and transactions whose lost connection becomes 503 key_store_unavailable, fast, so the request path
// only meets it for a key not yet in its cache.
import pg from "pg";
import { ApiError } from "../../src/errors.ts";
import { KeyCapReached } from "./key-store.ts";
import { migrate } from "./postgres-schema.ts";

/** BIGINT columns (times in ms, counters, epochs) come back as numbers: every one of ours fits in 2^53. */
export const TYPES = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === pg.types.builtins.INT8 ? Number : pg.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
};

/** How long a call waits for a connection before the database counts as away. */
const CONNECT_TIMEOUT_MS = 2_000;

/** A failure of the connection, not of the statement: the database is away (SQLSTATE classes 08, 53, 57P). */
export function isUnreachable(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" && /^(08|53|57P)/.test(code)) return true;
  return !(err instanceof pg.DatabaseError);
}

export const unavailable = () =>
  new ApiError("key_store_unavailable", "The gateway's key store (PostgreSQL) cannot be reached just now; keys already in use keep working; retry shortly.");

export type Query = <R extends object = Record<string, unknown>>(text: string, params?: unknown[]) => Promise<R[]>;

export class PostgresPool {
  private constructor(private readonly pool: pg.Pool) {}

  /** Connects and migrates; throws the driver's error when the database cannot be reached or refuses us. */
  static async open(url: string, onError: (err: Error) => void): Promise<PostgresPool> {
    const pool = new pg.Pool({ connectionString: url, max: 8, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, idleTimeoutMillis: 30_000, types: TYPES });
    // an idle connection dropped by a restarting server is reported here; without a listener it would end the process
    pool.on("error", onError);
    try {
      const client = await pool.connect();
      try {
        await migrate(client);
      } finally {
        client.release();
      }
    } catch (err) {
      await pool.end();
      throw err;
    }
    return new PostgresPool(pool);
  }

  /** One statement; a lost connection becomes 503 key_store_unavailable, anything else stays itself. */
  readonly query: Query = async <R extends object>(text: string, params: unknown[] = []) => {
    try {
      return (await this.pool.query<R>(text, params)).rows;
    } catch (err) {
      throw isUnreachable(err) ? unavailable() : err;
    }
  };

  /** Several statements in one transaction on one connection. */
  async transaction<T>(body: (query: (text: string, params?: unknown[]) => Promise<Record<string, unknown>[]>) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch {
      throw unavailable();
    }
    try {
      await client.query("BEGIN");
      const result = await body(async (text, params = []) => (await client.query(text, params)).rows);
      await client.query("COMMIT");
      return result;
    } catch (err) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw err instanceof ApiError || err instanceof KeyCapReached || !isUnreachable(err) ? err : unavailable();
    } finally {
      client.release();
    }
  }

  end(): Promise<void> {
    return this.pool.end();
  }
}
