/**
 * PostgreSQL storage on postgres.js with a pool of single-connection clients.
 * A transaction holds exactly one connection and every statement inside it
 * runs on that connection, so no request ever waits for a second connection.
 *
 * @module
 */

// Full specifier, not the import map: embedders import mod.ts without it.
// deno-lint-ignore no-import-prefix
import postgres from "npm:postgres@3.4.7";
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
import { RowMakers } from "./shapes.ts";

const TYPES: Record<ColumnKind, string> = {
  text: "TEXT",
  int: "BIGINT",
  double: "DOUBLE PRECISION",
  bool: "BOOLEAN",
  json: "JSONB",
};

const CODES: Record<string, ConstraintFailure["kind"]> = {
  "23505": "unique",
  "23503": "foreign_key",
  "23502": "not_null",
  "23514": "check",
};

/** The PostgreSQL dialect. */
export const postgresDialect: Dialect = {
  name: "postgres",
  forUpdate: " FOR UPDATE",
  jsonArrayContains: (col) => `${col} @> jsonb_build_array(?::text)`,
  columnType: (kind) => TYPES[kind],
  encode(kind, value) {
    if (value === null || value === undefined) return null;
    // postgres.js serializes JSONB parameters itself (it learns their type when preparing).
    if (kind === "json") return value as SqlValue;
    return value as SqlValue;
  },
  decode(kind, value) {
    if (value === null || value === undefined) return null;
    if (kind === "int" || kind === "double") return Number(value);
    return value;
  },
  constraintFailure(err) {
    const e = err as { code?: string; constraint_name?: string };
    const kind = e.code ? CODES[e.code] : undefined;
    if (!kind) return undefined;
    return e.constraint_name
      ? { kind, constraint: e.constraint_name }
      : { kind };
  },
};

const numbered = new Map<string, string>();

/** Rewrites `?` placeholders to `$1…$n` (generated SQL never has `?` elsewhere). */
function numberedPlaceholders(sql: string): string {
  let out = numbered.get(sql);
  if (out === undefined) {
    let n = 0;
    out = sql.replace(/\?/g, () => `$${++n}`);
    if (numbered.size > 5000) numbered.clear();
    numbered.set(sql, out);
  }
  return out;
}

type Sql = postgres.Sql | postgres.TransactionSql;

const CONNECTION_ERRORS = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "57P01",
  "57P03",
]);

/** PostgreSQL cannot store NUL characters in text: a clear 400 instead of a 500. */
function clientError(err: unknown): unknown {
  const code = (err as { code?: string }).code;
  if (code && CONNECTION_ERRORS.has(code)) {
    return new MoonbaseError(
      "unavailable",
      "Cannot reach the database: try again later",
    );
  }
  if (code === "42703" || code === "42P01") {
    return new MoonbaseError(
      "conflict",
      "Cannot complete: the entity's schema changed during the request; retry",
    );
  }
  if (code === "22021" || code === "22P05" || code === "22P02") {
    return new MoonbaseError(
      "invalid",
      "Cannot use value: it contains characters the database cannot store",
    );
  }
  return err;
}

const makers = new RowMakers();

function queryable(sql: Sql): Queryable {
  const pending = (text: string, params: readonly SqlValue[]) =>
    sql.unsafe(
      numberedPlaceholders(text),
      params as postgres.ParameterOrJSON<never>[],
      { prepare: true },
    );
  const unsafe = async (text: string, params: readonly SqlValue[]) => {
    try {
      return await pending(text, params);
    } catch (err) {
      throw clientError(err);
    }
  };
  return {
    async query(text, params = []) {
      // Rows as arrays, made into objects by one generated literal (see
      // shapes.ts): postgres.js's own objects store each column by name.
      let values;
      try {
        values = await pending(text, params).values();
      } catch (err) {
        throw clientError(err);
      }
      const columns = values.columns ?? [];
      if (values.length === 0 || columns.length === 0) return [];
      const make = makers.for(text, columns);
      const rows: Row[] = new Array(values.length);
      for (let i = 0; i < values.length; i++) rows[i] = make(values[i]);
      return rows;
    },
    async run(text, params = []) {
      return (await unsafe(text, params)).count;
    },
    async exec(text) {
      await sql.unsafe(text);
    },
  };
}

/** One connection of the pool, with the work sent to it and not yet settled. */
interface Lane {
  sql: postgres.Sql;
  q: Queryable;
  pending: number;
  /** A transaction holds the connection (at most one does). */
  held: boolean;
}

function openLane(url: string): Lane {
  const sql = postgres(url, {
    max: 1,
    // Connections stay open: the pool is small and fixed, and postgres.js's
    // idle timer, re-armed after every query, made Deno warn of a negative
    // timeout under load.
    idle_timeout: 0,
    connect_timeout: 5,
    onnotice: () => {},
    // int8 and numeric as JSON numbers (Moonbase ints are safe integers).
    types: {
      int8: {
        to: 20,
        from: [20],
        serialize: (x: unknown) => String(x),
        parse: (x: string) => Number(x),
      },
      numeric: {
        to: 1700,
        from: [1700],
        serialize: (x: unknown) => String(x),
        parse: (x: string) => Number(x),
      },
    },
    transform: { undefined: null },
  });
  return { sql, q: queryable(sql), pending: 0, held: false };
}

/**
 * Storage on a PostgreSQL database.
 *
 * The pool is ours: `max` postgres.js clients of one connection each, and
 * every statement goes to the connection with the least unsettled work
 * (queries pipeline on it), never to one a transaction holds (when all are
 * held, it waits for the first to be released).
 * postgres.js's own pool moves connections between queues whose arrays only
 * shrink when they empty, and a connection is looked up by a linear scan: under
 * steady load that scan grew with every query and, on this project's
 * benchmark, doubled the CPU per request within a minute.
 */
export class PostgresStorage implements Storage {
  readonly dialect = postgresDialect;
  #lanes: Lane[];
  #waiting: (() => void)[] = [];

  /** Creates a pool for `url` (no connection is made until `connect()`). */
  constructor(url: string, max = 10) {
    this.#lanes = Array.from({ length: Math.max(1, max) }, () => openLane(url));
  }

  /** The free lane with the least work; undefined when every lane is held. */
  #lane(): Lane | undefined {
    let best: Lane | undefined;
    for (const l of this.#lanes) {
      if (!l.held && (!best || l.pending < best.pending)) best = l;
    }
    return best;
  }

  async #on<T>(fn: (lane: Lane) => Promise<T>): Promise<T> {
    let lane = this.#lane();
    // Every connection is held by a transaction: wait for the first to end
    // rather than queue behind one chosen now.
    while (!lane) {
      await new Promise<void>((wake) => this.#waiting.push(wake));
      lane = this.#lane();
    }
    lane.pending++;
    try {
      return await fn(lane);
    } finally {
      lane.pending--;
    }
  }

  /** Checks that the server answers; throws `StorageUnavailableError` otherwise. */
  async connect(): Promise<void> {
    try {
      await Promise.all(this.#lanes.map((l) => l.sql`SELECT 1 AS ok`));
    } catch (err) {
      await this.#end(0);
      const msg = err instanceof Error ? err.message : String(err);
      throw new StorageUnavailableError(`Cannot connect to PostgreSQL: ${msg}`);
    }
  }

  query(sql: string, params?: readonly SqlValue[]): Promise<Row[]> {
    return this.#on((l) => l.q.query(sql, params));
  }

  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.#on((l) => l.q.run(sql, params));
  }

  exec(sql: string): Promise<void> {
    return this.#on((l) => l.q.exec(sql));
  }

  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.#on(async (lane) => {
      lane.held = true;
      try {
        return await lane.sql.begin((tx) => fn(queryable(tx))) as T;
      } catch (err) {
        // DDL errors inside a transaction keep their own meaning (the registry maps them).
        const code = (err as { code?: string }).code;
        throw code && CONNECTION_ERRORS.has(code) ? clientError(err) : err;
      } finally {
        lane.held = false;
        const waiting = this.#waiting;
        this.#waiting = [];
        for (const wake of waiting) wake();
      }
    });
  }

  async ping(): Promise<void> {
    await this.#on((l) => l.sql`SELECT 1 AS ok`);
  }

  async #end(timeout: number): Promise<void> {
    await Promise.all(
      this.#lanes.map((l) => l.sql.end({ timeout }).catch(() => {})),
    );
  }

  async close(): Promise<void> {
    await this.#end(5);
  }
}
