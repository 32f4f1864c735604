/**
 * postgres.js clients and what runs on them: `?` placeholders, rows built by
 * generated literals, and driver errors mapped to Moonbase's (a lost
 * connection → `StorageUnavailableError`, a full disk → 507, …).
 *
 * @module
 */

// Full specifier, not the import map: embedders import mod.ts without it.
// deno-lint-ignore no-import-prefix
import postgres from "npm:postgres@3.4.7";
import type { Queryable, Row, SqlValue } from "./storage.ts";
import { diskFull, MoonbaseError, StorageUnavailableError } from "../errors.ts";
import { RowMakers } from "./shapes.ts";

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

/** Errors that mean "the database cannot be reached", not "the query failed". */
const CONNECTION_ERRORS = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now
]);

/** True when `err` says the database cannot be reached. */
export function unreachable(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code !== undefined && CONNECTION_ERRORS.has(code);
}

export function lost(err: unknown): StorageUnavailableError {
  const code = (err as { code?: string }).code;
  return new StorageUnavailableError(`Cannot reach PostgreSQL: ${code}`);
}

/**
 * PostgreSQL refused a new connection: too_many_connections (53300;
 * `max_connections`, or a role's or database's `CONNECTION LIMIT`). A clear
 * 503, not an outage to trip on; its own class, so that a caller with
 * another connection to fall back on can tell it apart.
 */
export class TooManyConnectionsError extends MoonbaseError {
  constructor() {
    super(
      "unavailable",
      "Cannot reach PostgreSQL: it refuses more connections (too many connections); lower --poolSize or raise the server's connection limit",
      null,
      { "retry-after": "5" },
    );
  }
}

/** PostgreSQL cannot store NUL characters in text: a clear 400 instead of a 500. */
export function clientError(err: unknown): unknown {
  const code = (err as { code?: string }).code;
  if (unreachable(err)) return lost(err);
  if (code === "53100") return diskFull();
  if (code === "57014") {
    // statement_timeout (a runaway query, e.g. an unbounded view): the
    // connection is free again, the request gets a clear answer.
    return new MoonbaseError(
      "unavailable",
      "Cannot answer in time: a database query ran longer than the statement timeout",
      null,
      { "retry-after": "5" },
    );
  }
  if (code === "53300") return new TooManyConnectionsError();
  if (code === "40P01" || code === "40001") {
    // deadlock_detected, serialization_failure: two writes (batches) took
    // rows in opposite order; PostgreSQL rolled this one back whole.
    return new MoonbaseError(
      "conflict",
      "Cannot complete: a concurrent write held the same records; retry",
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

/**
 * A deadlock or serialization failure raised where no statement of ours
 * maps it (at `COMMIT`): the 409 `clientError` gives.
 */
export function conflicted(err: unknown): unknown {
  const code = (err as { code?: string } | null)?.code;
  return code === "40P01" || code === "40001" ? clientError(err) : undefined;
}

const makers = new RowMakers();

/** Statements with parameters: prepared once per connection, then bound. */
const PREPARED = { prepare: true } as const;
/**
 * A `SELECT` without parameters prepared too: postgres.js would send it as
 * a simple query, parsed and planned by the server every time and its row
 * description decoded every time (list 50: PostgreSQL's CPU per query 27 →
 * 17.5 µs). Other statements without parameters (savepoints with their own
 * names, DDL) stay simple: a prepared statement of each would pile up on the
 * connection. (`simple` is read by postgres.js, not named by its types.)
 */
const REUSED = { prepare: true, simple: false } as const;

const UNNAMED = { prepare: false } as const;
const UNNAMED_SELECT = { prepare: false, simple: false } as const;

/**
 * The statement texts that may be prepared (kept by name on each
 * connection, ~20 kB of server memory each): the first ones seen, up to a
 * cap. Others run as unnamed statements, parsed and planned each time: list
 * texts vary with sort, limit and filter shape, and a client must not be
 * able to grow every connection's memory without end.
 */
const preparable = new Set<string>();
const MAX_PREPARED = 256;

function mayPrepare(text: string): boolean {
  if (preparable.has(text)) return true;
  if (preparable.size >= MAX_PREPARED) return false;
  preparable.add(text);
  return true;
}

function options(text: string, params: readonly SqlValue[]) {
  const select = params.length === 0 && text.startsWith("SELECT ");
  // Without parameters and not a SELECT: a simple query, never prepared.
  if (params.length === 0 && !select) return PREPARED;
  if (mayPrepare(text)) return select ? REUSED : PREPARED;
  return select ? UNNAMED_SELECT : UNNAMED;
}

export function queryable(sql: Sql | postgres.TransactionSql): Queryable {
  const pending = (text: string, params: readonly SqlValue[]) =>
    sql.unsafe(
      numberedPlaceholders(text),
      params as postgres.ParameterOrJSON<never>[],
      options(text, params),
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
      // Emptied once copied: postgres.js resolves the query's promise with
      // this array, and under load those promises outlive the young
      // generation's collections (held from old space until a full one;
      // why was not found). Every row then survived and was promoted: 5–7
      // MB per scavenge, scavenges 25× longer, list 50 at 90 instead of 65
      // µs of CPU per request.
      values.length = 0;
      return rows;
    },
    async run(text, params = []) {
      const result = await unsafe(text, params);
      const count = result.count;
      result.length = 0; // rows of a RETURNING: see query()
      return count;
    },
    ...("savepoint" in sql && {
      savepoint: <T>(fn: (tx: Queryable) => Promise<T>) =>
        sql.savepoint((sp) => fn(queryable(sp))) as Promise<T>,
    }),
    async exec(text) {
      try {
        await sql.unsafe(text);
      } catch (err) {
        // DDL errors keep their own meaning (the registry maps them).
        throw unreachable(err) ? lost(err) : conflicted(err) ?? err;
      }
    },
  };
}

/**
 * Ends a client being dropped, waiting at most `timeout` seconds for what
 * runs on it. A failure to end it is ignored: the client is discarded either
 * way (its connection closed or already gone), and a statement that ran on
 * it has failed to its own caller.
 */
export function endClient(sql: postgres.Sql, timeout: number): Promise<void> {
  return sql.end({ timeout }).catch(() => {});
}

/**
 * A postgres.js client of one connection; `statementTimeoutMs` (0: none)
 * cancels any statement running longer (PostgreSQL's `statement_timeout`);
 * `customPlans`: its prepared statements are planned for each call's values
 * (`plan_cache_mode = force_custom_plan`), never with a generic plan.
 */
export function client(
  url: string,
  connectTimeout: number,
  statementTimeoutMs = 0,
  customPlans = false,
): postgres.Sql {
  return postgres(url, {
    max: 1,
    connection: {
      ...statementTimeoutMs > 0 && { statement_timeout: statementTimeoutMs },
      ...customPlans && { plan_cache_mode: "force_custom_plan" },
    },
    // Connections stay open: the pool is small and fixed, and postgres.js's
    // idle timer, re-armed after every query, made Deno warn of a negative
    // timeout under load.
    idle_timeout: 0,
    // No lifetime either: postgres.js's lifetime timer ends only when the
    // socket's close arrives, after `sql.end()` resolved (at once with a
    // timeout of 0, or while a statement ran), so a closed app left a timer
    // running for up to an hour (tests' op sanitizer saw it). A dropped
    // connection is replaced by the pool anyway (postgres.ts).
    max_lifetime: null,
    connect_timeout: connectTimeout,
    // postgres.js's own backoff grows to 20 s between reconnects: requests
    // queued behind it hung that long once the database was back.
    backoff: (attempt: number) => Math.min(0.05 * attempt, 0.5),
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
}
