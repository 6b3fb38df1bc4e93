// The SQLite driver under the key store, behind one small interface: Node's own `node:sqlite` wherever the running
// Node has it (22.13+, 24, 26), so nothing native is built, aborts or needs an install script; on Node 20, which has
// none, libsql (a better-sqlite3-compatible binding on Node-API, prebuilt per platform, no install script).
import { createRequire } from "node:module";

export type SqlValue = null | number | bigint | string | Uint8Array;

export interface SqlStatement<P extends SqlValue[] = SqlValue[], R = unknown> {
  get(...params: P): R | undefined;
  all(...params: P): R[];
  run(...params: P): { changes: number };
}

export interface SqlDatabase {
  /** Compiles a statement; callers keep it (a key lookup sits on the request path). */
  prepare<P extends SqlValue[] = SqlValue[], R = unknown>(sql: string): SqlStatement<P, R>;
  /** Runs one or more statements that return nothing. */
  exec(sql: string): void;
  close(): void;
  readonly isOpen: boolean;
  /** Which driver runs it, for `svc-gateway --version`-style reports and the tests. */
  readonly driver: string;
}

const require = createRequire(import.meta.url);

/** Opens (creating) the SQLite file at `path`. */
export function openSqlite(path: string, options: { readOnly?: boolean } = {}): SqlDatabase {
  const nodeSqlite = loadNodeSqlite();
  if (nodeSqlite !== undefined) return new NodeSqlite(new nodeSqlite.DatabaseSync(path, { readOnly: options.readOnly ?? false }));
  return openFallback(path, options);
}

/** Runs `body` in one transaction: IMMEDIATE takes the write lock first, so two writers never deadlock on upgrade. */
export function transaction<T>(db: SqlDatabase, body: () => T, mode: "DEFERRED" | "IMMEDIATE" = "DEFERRED"): T {
  db.exec(`BEGIN ${mode}`);
  try {
    const result = body();
    db.exec("COMMIT");
    return result;
  } catch (err) {
    if (db.isOpen) db.exec("ROLLBACK");
    throw err;
  }
}

/** A pragma's value (`PRAGMA user_version`). */
export function pragmaValue(db: SqlDatabase, name: string): unknown {
  const row = db.prepare<[], Record<string, unknown>>(`PRAGMA ${name}`).get();
  return row === undefined ? undefined : Object.values(row)[0];
}

/** What the store uses of `node:sqlite` (this project's @types/node is Node 20's, which has no such module). */
interface NodeSqliteModule {
  DatabaseSync: new (path: string, options: { readOnly: boolean }) => DatabaseSync;
}
interface DatabaseSync {
  prepare(sql: string): StatementSync;
  exec(sql: string): void;
  close(): void;
  readonly isOpen: boolean;
}
interface StatementSync {
  get(...params: SqlValue[]): unknown;
  all(...params: SqlValue[]): unknown[];
  run(...params: SqlValue[]): { changes: number | bigint };
}

function loadNodeSqlite(): NodeSqliteModule | undefined {
  // Node 22 announces the module as experimental on load; the key store is its one user, so that line says nothing
  // to an operator (Node 24 and 26 print none)
  const emit = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if (String(warning).includes("SQLite is an experimental feature")) return;
    (emit as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return require("node:sqlite") as NodeSqliteModule;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ERR_UNKNOWN_BUILTIN_MODULE") return undefined;
    throw err;
  } finally {
    process.emitWarning = emit;
  }
}

class NodeSqlite implements SqlDatabase {
  readonly driver = "node:sqlite";
  constructor(private readonly db: DatabaseSync) {}

  prepare<P extends SqlValue[] = SqlValue[], R = unknown>(sql: string): SqlStatement<P, R> {
    const statement = this.db.prepare(sql);
    return {
      get: (...params) => statement.get(...params) as R | undefined,
      all: (...params) => statement.all(...params) as R[],
      run: (...params) => ({ changes: Number(statement.run(...params).changes) }),
    };
  }

  exec(sql: string): void {
    this.db.exec(sql);
  }

  get isOpen(): boolean {
    return this.db.isOpen;
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
  }
}

/** What the store uses of libsql (better-sqlite3's API). */
interface LibsqlDatabase {
  prepare(sql: string): { get(...p: SqlValue[]): unknown; all(...p: SqlValue[]): unknown[]; run(...p: SqlValue[]): { changes: number } };
  exec(sql: string): void;
  close(): void;
  readonly open: boolean;
}

function openFallback(path: string, options: { readOnly?: boolean }): SqlDatabase {
  const Database = require("libsql") as new (path: string, options: { readonly: boolean }) => LibsqlDatabase;
  const db = new Database(path, { readonly: options.readOnly ?? false });
  return {
    driver: "libsql",
    prepare: <P extends SqlValue[], R>(sql: string): SqlStatement<P, R> => {
      const statement = db.prepare(sql);
      return {
        get: (...params) => withoutTiming(statement.get(...params)) as R | undefined,
        all: (...params) => statement.all(...params).map(withoutTiming) as R[],
        run: (...params) => statement.run(...params),
      };
    },
    exec: (sql) => void db.exec(sql),
    close: () => {
      if (db.open) db.close();
    },
    get isOpen() {
      return db.open;
    },
  };
}

/** libsql adds its own `_metadata` (a query's duration) to every row; a row is only its columns here. */
function withoutTiming(row: unknown): unknown {
  if (typeof row !== "object" || row === null || !("_metadata" in row)) return row;
  const { _metadata: _timing, ...columns } = row as Record<string, unknown>;
  return columns;
}
