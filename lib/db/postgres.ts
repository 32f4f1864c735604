/**
 * PostgreSQL storage on postgres.js with a pool of single-connection clients.
 * A transaction holds exactly one connection and every statement inside it
 * runs on that connection, so no request ever waits for a second connection.
 *
 * @module
 */

// Full specifier, not the import map: embedders import mod.ts without it.
// deno-lint-ignore no-import-prefix
import type postgres from "npm:postgres@3.4.7";
import type {
  DatabaseState,
  Queryable,
  Row,
  SqlValue,
  Storage,
} from "./storage.ts";
import { StorageUnavailableError } from "../errors.ts";
import { Breaker, BREAKER_TIMES } from "./pg_breaker.ts";
import {
  client,
  clientError,
  conflicted,
  endClient,
  lost,
  queryable,
  TooManyConnectionsError,
  unreachable,
} from "./pg_client.ts";
import { postgresDialect } from "./postgres_dialect.ts";

export { postgresDialect } from "./postgres_dialect.ts";

/**
 * How long an answer to any statement of the pool vouches for the database
 * (`stateNow`): the health check pings at most once in this time, and a
 * database that stops answering shows as unavailable within it plus the
 * health check's own deadline (1 s).
 */
export const ANSWER_FRESH_MS = 1000;

/** A postgres.js client of one connection and its statements. */
interface Connection {
  sql: postgres.Sql;
  q: Queryable;
}

/** One connection of the pool, with the work sent to it and not yet settled. */
interface Lane extends Connection {
  /**
   * Its twin for `queryCustomPlan`, opened on first use: a second connection
   * whose prepared statements are planned for each call's values; the lane
   * itself when the server refused the twin.
   */
  custom?: Connection;
  pending: number;
  /** A transaction holds the connection (at most one does). */
  held: boolean;
  /** Statements settled so far, and the count and time the stall watch last saw. */
  settled: number;
  seen: number;
  seenAt: number;
}

function openConnection(
  url: string,
  statementTimeoutMs: number,
  customPlans = false,
): Connection {
  const sql = client(url, 5, statementTimeoutMs, customPlans);
  return { sql, q: queryable(sql) };
}

function openLane(url: string, statementTimeoutMs: number): Lane {
  return {
    ...openConnection(url, statementTimeoutMs),
    pending: 0,
    held: false,
    settled: 0,
    seen: 0,
    seenAt: Date.now(),
  };
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
 *
 * When the database cannot be reached, a breaker (see pg_breaker.ts) makes
 * every statement fail at once with `StorageUnavailableError` (503) until a
 * background probe gets an answer again.
 */
export class PostgresStorage implements Storage {
  readonly dialect = postgresDialect;
  #url: string;
  #lanes: Lane[];
  #waiting: (() => void)[] = [];
  #breaker: Breaker;
  #probe: postgres.Sql | undefined;
  #statementTimeoutMs: number;
  readonly #now: () => number;
  /** When a statement of the pool last got its answer (`#now`'s clock). */
  #answeredAt = -Infinity;
  /** The ping `state()` is waiting for, shared by every caller meanwhile. */
  #pinging: Promise<DatabaseState> | undefined;

  /** Creates a pool for `url` (no connection is made until `connect()`). */
  /**
   * `statementTimeoutMs` (0: none) bounds every statement of the pool;
   * schema changes lift it inside their transaction.
   */
  constructor(
    url: string,
    max = 10,
    statementTimeoutMs = 0,
    now: () => number = performance.now.bind(performance),
  ) {
    this.#now = now;
    this.#url = url;
    this.#statementTimeoutMs = statementTimeoutMs;
    this.#lanes = Array.from(
      { length: Math.max(1, max) },
      () => openLane(url, statementTimeoutMs),
    );
    this.#breaker = new Breaker({
      probe: (ms) => this.#probeOnce(ms),
      stalled: (now, ms) => this.#stalled(now, ms),
      onOpen: () => this.#dropConnections(),
    });
  }

  /** Asks the database for `SELECT 1` on a connection of its own, within `ms`. */
  async #probeOnce(ms: number): Promise<boolean> {
    const sql = this.#probe ??= client(this.#url, ms / 1000);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<"late">((r) => timer = setTimeout(r, ms, "late"));
    try {
      const out = await Promise.race([
        sql`SELECT 1 AS ok`.then(() => "ok" as const, (e: unknown) => e),
        late,
      ]);
      // Any answer of the server's own (even an error) means it is reachable.
      if (out === "ok" || (out !== "late" && !unreachable(out))) return true;
    } finally {
      clearTimeout(timer);
    }
    // A fresh client next time: this one may be stuck or backing off.
    this.#probe = undefined;
    endClient(sql, 0);
    return false;
  }

  /** True when a connection has had work without any settling for `ms`. */
  #stalled(now: number, ms: number): boolean {
    let stalled = false;
    for (const l of this.#lanes) {
      if (l.pending === 0 || l.settled !== l.seen) {
        l.seen = l.settled;
        l.seenAt = now;
      } else if (now - l.seenAt >= ms) stalled = true;
    }
    return stalled;
  }

  /**
   * The database is unreachable: new connections replace the old ones, and
   * what hung on the old ones fails now (postgres.js rejects it when its
   * client is destroyed) instead of waiting for the database to return.
   */
  #dropConnections(): void {
    const old = this.#lanes;
    this.#lanes = old.map(() => openLane(this.#url, this.#statementTimeoutMs));
    for (const l of old) {
      endClient(l.sql, 0);
      if (l.custom) endClient(l.custom.sql, 0);
    }
    this.#wake();
  }

  #wake(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const wake of waiting) wake();
  }

  #unavailable(): StorageUnavailableError {
    return new StorageUnavailableError(
      "Cannot reach PostgreSQL: it did not answer; retrying in the background",
    );
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
    if (this.#breaker.open) throw this.#unavailable();
    let lane = this.#lane();
    // Every connection is held by a transaction: wait for the first to end
    // rather than queue behind one chosen now.
    while (!lane) {
      await new Promise<void>((wake) => this.#waiting.push(wake));
      if (this.#breaker.open) throw this.#unavailable();
      lane = this.#lane();
    }
    lane.pending++;
    try {
      const out = await fn(lane);
      this.#answeredAt = this.#now();
      return out;
    } catch (err) {
      // A lost connection: is the database gone, or only this connection?
      if (err instanceof StorageUnavailableError) this.#breaker.suspect();
      throw err;
    } finally {
      lane.pending--;
      lane.settled++;
    }
  }

  /** Checks that the server answers; throws `StorageUnavailableError` otherwise. */
  async connect(): Promise<void> {
    try {
      // The probe's connection too: a probe then only costs a round trip.
      this.#probe = client(this.#url, BREAKER_TIMES.probeMs / 1000);
      await Promise.all(
        [...this.#lanes.map((l) => l.sql), this.#probe].map((sql) =>
          sql`SELECT 1 AS ok`
        ),
      );
    } catch (err) {
      this.#breaker.stop();
      if (this.#probe) await endClient(this.#probe, 0);
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

  /**
   * On the lane's twin connection (`plan_cache_mode = force_custom_plan`):
   * a list under a filter like `n >= 2000 && n < 4000 && tag == "t3"`,
   * sorted by `-n`, read 2 000 rows of n's own index and sorted 200 under the
   * generic plan (it guessed 5 rows), ~300 µs of the server's CPU per call;
   * planned for its values it stops after the page's rows, ~150 µs with the
   * planning. The pool's other statements keep their generic plans: planning
   * a read by id each time doubled its cost on the server (14 → 29 µs).
   */
  queryCustomPlan(sql: string, params: readonly SqlValue[]): Promise<Row[]> {
    return this.#on(async (l) => {
      const twin = l.custom ??= openConnection(
        this.#url,
        this.#statementTimeoutMs,
        true,
      );
      try {
        return await twin.q.query(sql, params);
      } catch (err) {
        if (!(err instanceof TooManyConnectionsError)) throw err;
        // The server refused the twin (a connection limit the pool alone
        // fits in): this lane's lists keep its own connection and generic
        // plans until the lane is replaced, rather than fail.
        endClient(twin.sql, 0);
        l.custom = l;
        return await l.q.query(sql, params);
      }
    });
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
        throw unreachable(err) ? lost(err) : conflicted(err) ?? err;
      } finally {
        lane.held = false;
        this.#wake();
      }
    });
  }

  async snapshot<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    if (this.#breaker.open) throw this.#unavailable();
    // A connection of its own: a long backup holds none of the pool's.
    const sql = client(this.#url, BREAKER_TIMES.probeMs / 1000);
    try {
      return await sql.begin(
        "ISOLATION LEVEL REPEATABLE READ READ ONLY",
        (tx) => fn(queryable(tx)),
      ) as T;
    } catch (err) {
      throw unreachable(err) ? lost(err) : err;
    } finally {
      await endClient(sql, 0);
    }
  }

  async ping(): Promise<void> {
    await this.#on(async (l) => {
      try {
        await l.sql`SELECT 1 AS ok`;
      } catch (err) {
        throw clientError(err);
      }
    });
  }

  /**
   * "ok" while a statement of the pool got its answer within the last
   * `ANSWER_FRESH_MS` (the health check then costs no round trip),
   * "unavailable" while the breaker is open; else undefined: ask `state()`.
   */
  stateNow(): DatabaseState | undefined {
    if (this.#breaker.open) return "unavailable";
    return this.#now() - this.#answeredAt < ANSWER_FRESH_MS ? "ok" : undefined;
  }

  /** Pings (one ping at a time, whoever asks meanwhile shares it). */
  state(): Promise<DatabaseState> {
    if (this.#breaker.open) return Promise.resolve("unavailable");
    return this.#pinging ??= this.ping().then(
      (): DatabaseState => "ok",
      // Not ignored: the failure is the answer.
      (): DatabaseState => "unavailable",
    ).finally(() => this.#pinging = undefined);
  }

  async #end(timeout: number): Promise<void> {
    await Promise.all(
      this.#lanes.flatMap((l) => [l.sql, ...l.custom ? [l.custom.sql] : []])
        .map((sql) => endClient(sql, timeout)),
    );
  }

  async close(): Promise<void> {
    this.#breaker.stop();
    if (this.#probe) await endClient(this.#probe, 0);
    await this.#end(5);
  }
}
