/**
 * SQLite storage on `node:sqlite` (WAL, synchronous=NORMAL, busy_timeout,
 * foreign keys, prepared-statement cache). Statements only ever run through
 * `.all()` / `.run()`, which reset them, so no read transaction stays open
 * and the WAL can be checkpointed.
 *
 * @module
 */

import { DatabaseSync, type StatementSync } from "node:sqlite";
import type {
  ColumnKind,
  ConstraintFailure,
  Dialect,
  Queryable,
  Row,
  SqlValue,
  Storage,
} from "./storage.ts";
import { StorageUnavailableError } from "./storage.ts";
import { MoonbaseError } from "../errors.ts";

const TYPES: Record<ColumnKind, string> = {
  text: "TEXT",
  int: "INTEGER",
  double: "REAL",
  bool: "INTEGER",
  json: "TEXT",
};

/** The SQLite dialect. */
export const sqliteDialect: Dialect = {
  name: "sqlite",
  forUpdate: "",
  jsonArrayContains: (col) =>
    `EXISTS (SELECT 1 FROM json_each(${col}) WHERE json_each.value = ?)`,
  columnType: (kind) => TYPES[kind],
  encode(kind, value) {
    if (value === null || value === undefined) return null;
    if (kind === "bool") return value ? 1 : 0;
    if (kind === "json") return JSON.stringify(value);
    return value as SqlValue;
  },
  decode(kind, value) {
    if (value === null || value === undefined) return null;
    if (kind === "bool") return value === 1 || value === true;
    if (kind === "json") {
      return typeof value === "string" ? JSON.parse(value) : value;
    }
    return value;
  },
  constraintFailure(err) {
    const code = (err as { errcode?: number }).errcode;
    const message = err instanceof Error ? err.message : "";
    const table: Record<number, ConstraintFailure["kind"]> = {
      2067: "unique",
      1555: "unique",
      787: "foreign_key",
      1299: "not_null",
      275: "check",
    };
    const byMessage = /^UNIQUE constraint failed/.test(message)
      ? "unique"
      : /^FOREIGN KEY constraint failed/.test(message)
      ? "foreign_key"
      : /^NOT NULL constraint failed/.test(message)
      ? "not_null"
      : undefined;
    const kind = (code === undefined ? undefined : table[code]) ?? byMessage;
    if (!kind) return undefined;
    const column = /failed: ([\w.]+)/.exec(message)?.[1];
    return column ? { kind, column } : { kind };
  },
};

/** A statement that names a column or table a concurrent schema change removed: 409, retry. */
function staleSchema(err: unknown): unknown {
  const msg = err instanceof Error ? err.message : "";
  if (
    /^(no such column|no such table|table \S+ has no column named)/.test(msg)
  ) {
    return new MoonbaseError(
      "conflict",
      "Cannot complete: the entity's schema changed during the request; retry",
    );
  }
  return err;
}

/** A cached statement and its result column names. */
interface Prepared {
  st: StatementSync;
  names: string[];
}

/** Storage on a SQLite file (or `:memory:`). */
export class SqliteStorage implements Storage {
  readonly dialect = sqliteDialect;
  #db: DatabaseSync;
  #cache = new Map<string, Prepared>();
  #tail: Promise<void> = Promise.resolve();
  #active: Promise<void> | undefined;
  #direct: Queryable;

  /** Opens (creating if needed) the database file at `path`. */
  constructor(path: string) {
    try {
      this.#db = new DatabaseSync(path);
      this.#db.exec("PRAGMA journal_mode=WAL");
      this.#db.exec("PRAGMA synchronous=NORMAL");
      this.#db.exec("PRAGMA busy_timeout=5000");
      this.#db.exec("PRAGMA foreign_keys=ON");
      this.#db.exec("PRAGMA journal_size_limit=67108864");
    } catch (err) {
      throw new StorageUnavailableError(
        `Cannot open SQLite database ${path}: ${
          err instanceof Error ? err.message : err
        }`,
      );
    }
    this.#direct = {
      query: (sql, params) => Promise.resolve(this.#all(sql, params)),
      run: (sql, params) => Promise.resolve(this.#run(sql, params)),
      exec: (sql) => Promise.resolve(this.#db.exec(sql)),
    };
  }

  #stmt(sql: string): Prepared {
    let s = this.#cache.get(sql);
    if (!s) {
      if (this.#cache.size > 2000) this.#cache.clear();
      const st = this.#db.prepare(sql);
      // Rows come back as arrays and become plain objects here: cheaper than
      // the binding's own objects, and they serialize on V8's fast path.
      (st as StatementSync & { setReturnArrays(on: boolean): void })
        .setReturnArrays(true);
      s = { st, names: st.columns().map((c) => c.name) };
      this.#cache.set(sql, s);
    }
    return s;
  }

  #all(sql: string, params: readonly SqlValue[] = []): Row[] {
    try {
      return this.#allRaw(sql, params);
    } catch (err) {
      throw staleSchema(err);
    }
  }

  #allRaw(sql: string, params: readonly SqlValue[] = []): Row[] {
    const { st, names } = this.#stmt(sql);
    const arrays = st.all(...(params as never[])) as unknown as unknown[][];
    const rows: Row[] = new Array(arrays.length);
    for (let r = 0; r < arrays.length; r++) {
      const a = arrays[r], row: Row = {};
      for (let i = 0; i < names.length; i++) row[names[i]] = a[i];
      rows[r] = row;
    }
    return rows;
  }

  #run(sql: string, params: readonly SqlValue[] = []): number {
    try {
      return this.#runRaw(sql, params);
    } catch (err) {
      throw staleSchema(err);
    }
  }

  #runRaw(sql: string, params: readonly SqlValue[] = []): number {
    return Number(this.#stmt(sql).st.run(...(params as never[])).changes);
  }

  query(sql: string, params?: readonly SqlValue[]): Promise<Row[]> {
    // No transaction open: answer at once (no extra async frame per read).
    if (this.#active) return this.#later(() => this.#all(sql, params));
    try {
      return Promise.resolve(this.#all(sql, params));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    if (this.#active) return this.#later(() => this.#run(sql, params));
    try {
      return Promise.resolve(this.#run(sql, params));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Runs `fn` once no transaction is open. */
  async #later<T>(fn: () => T): Promise<T> {
    while (this.#active) await this.#active;
    return fn();
  }

  async exec(sql: string): Promise<void> {
    while (this.#active) await this.#active;
    this.#db.exec(sql);
    this.#cache.clear();
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const prev = this.#tail;
    let release!: () => void;
    const mine = new Promise<void>((r) => release = r);
    this.#tail = mine;
    await prev;
    while (this.#active) await this.#active;
    this.#active = mine;
    try {
      this.#db.exec("BEGIN IMMEDIATE");
      try {
        const out = await fn(this.#direct);
        this.#db.exec("COMMIT");
        return out;
      } catch (err) {
        if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
        this.#cache.clear();
        throw err;
      }
    } finally {
      this.#active = undefined;
      release();
    }
  }

  async ping(): Promise<void> {
    await this.query("SELECT 1 AS ok");
  }

  async close(): Promise<void> {
    while (this.#active) await this.#active;
    this.#cache.clear();
    if (this.#db.isOpen) {
      try {
        this.#db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
      } catch { /* best effort */ }
      this.#db.close();
    }
  }
}
