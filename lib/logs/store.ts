/**
 * The log table `mb_logs`: batched inserts, filtered newest-first reads with
 * a keyset cursor, and pruning by age and row count. On SQLite it lives in
 * its own file so log writes never contend with data writes.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { SqlValue, Storage } from "../db/storage.ts";
import {
  entryRow,
  INSTANCE,
  LOG_COLUMNS,
  logIdFloor,
  type LogRow,
  rowEntry,
  unpackRequests,
} from "./rows.ts";
import type { PackedChunk } from "./packed.ts";
import { isLevel, levelRank, LEVELS, type LogEntry } from "./types.ts";

/** Parameters of the logs API. */
export interface LogQuery {
  limit: number;
  after?: string;
  level?: string;
  min_level?: string;
  search?: string;
  start_date?: string;
  end_date?: string;
  type?: string;
}

/** A page of log entries. */
export interface LogPage {
  items: LogEntry[];
  items_count: number;
  limit: number;
  has_more: boolean;
  cursor: string | null;
}

const KNOWN = new Set([
  "limit",
  "after",
  "level",
  "min_level",
  "search",
  "start_date",
  "end_date",
  "type",
]);

function bad(message: string): never {
  throw new MoonbaseError("invalid", `Cannot read logs: ${message}`);
}

function isoOrFail(v: string, name: string): string {
  const t = Date.parse(v);
  if (!/^\d{4}-\d{2}-\d{2}/.test(v) || Number.isNaN(t)) {
    bad(`${name} must be an ISO 8601 date`);
  }
  return new Date(t).toISOString();
}

/**
 * Parses the logs API query; anything unknown or malformed is a 400.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseLogQuery } from "moonbase/lib/logs/store.ts";
 * const q = parseLogQuery(new URLSearchParams("limit=10&min_level=warn"));
 * assert.ok(q.limit === 10 && q.min_level === "warn");
 * ```
 */
export function parseLogQuery(p: URLSearchParams): LogQuery {
  for (const k of p.keys()) {
    if (!KNOWN.has(k)) bad(`unknown parameter "${k.slice(0, 64)}"`);
  }
  const q: LogQuery = { limit: 50 };
  const limit = p.get("limit");
  if (limit !== null) {
    if (!/^\d{1,5}$/.test(limit) || Number(limit) < 1 || Number(limit) > 1000) {
      bad("limit must be 1-1000");
    }
    q.limit = Number(limit);
  }
  for (const key of ["level", "min_level"] as const) {
    const v = p.get(key);
    if (v !== null && v !== "") {
      if (!isLevel(v)) bad(`${key} must be one of ${LEVELS.join(", ")}`);
      q[key] = v;
    }
  }
  const type = p.get("type");
  if (type !== null && type !== "") {
    if (type !== "request" && type !== "app") {
      bad("type must be request or app");
    }
    q.type = type;
  }
  const after = p.get("after");
  if (after !== null && after !== "") {
    if (!/^[0-9a-f]{12}-[0-9a-f]{6,8}-[A-Za-z0-9]{6}$/.test(after)) {
      bad("after is not a cursor from this list");
    }
    q.after = after;
  }
  const search = p.get("search");
  if (search !== null && search !== "") {
    if (search.length > 200) bad("search is longer than 200 characters");
    q.search = search;
  }
  for (const key of ["start_date", "end_date"] as const) {
    const v = p.get(key);
    if (v !== null && v !== "") q[key] = isoOrFail(v, key);
  }
  return q;
}

/** The writer thread's answer: the packed entries' buffers come back. */
interface Reply {
  id: number;
  error?: string;
  packed?: PackedChunk;
}

/** The log table on one storage. */
export class LogStore {
  readonly storage: Storage;
  #worker: Worker | undefined;
  #file: string | undefined;
  #jobs = new Map<number, (reply: Reply) => void>();
  #next = 0;

  /**
   * Uses `storage` (call `init()` once). With `sqliteFile`, inserts run in a
   * worker thread on their own connection to that file.
   */
  constructor(storage: Storage, sqliteFile?: string) {
    this.storage = storage;
    this.#file = sqliteFile;
  }

  #post(
    job: Record<string, unknown>,
    transfer: Transferable[] = [],
  ): Promise<PackedChunk | undefined> {
    if (!this.#worker) {
      this.#worker = new Worker(
        new URL("./writer_worker.ts", import.meta.url).href,
        { type: "module" },
      );
      this.#worker.onmessage = (e: MessageEvent<Reply>) => {
        const done = this.#jobs.get(e.data.id);
        this.#jobs.delete(e.data.id);
        done?.(e.data);
      };
    }
    const id = ++this.#next;
    return new Promise((resolve, reject) => {
      this.#jobs.set(
        id,
        (r) => r.error ? reject(new Error(r.error)) : resolve(r.packed),
      );
      this.#worker!.postMessage({ ...job, id, path: this.#file }, transfer);
    });
  }

  /** Stops the writer thread (after the last insert has been acknowledged). */
  close(): void {
    this.#worker?.terminate();
    this.#worker = undefined;
  }

  /** Creates the table and indexes. */
  async init(): Promise<void> {
    const d = this.storage.dialect;
    const text = d.columnType("text"),
      int = d.columnType("int"),
      dbl = d.columnType("double");
    await this.storage.exec(
      `CREATE TABLE IF NOT EXISTS "mb_logs" ("id" ${text} PRIMARY KEY, "time" ${text} NOT NULL, "level" ${text} NOT NULL, "level_n" ${int} NOT NULL, "type" ${text} NOT NULL, "message" ${text} NOT NULL, "method" ${text}, "path" ${text}, "status" ${int}, "duration_ms" ${dbl}, "ip" ${text}, "auth_id" ${text}, "auth_entity" ${text}, "request_id" ${text}, "data" ${text})${
        d.name === "sqlite" ? " WITHOUT ROWID" : ""
      }`,
    );
    // Ids begin with the time, so time ranges are id ranges: no separate time index.
    await this.storage.exec(`DROP INDEX IF EXISTS "mb_logs_time"`);
  }

  /**
   * Inserts entries and packed request entries (one transaction on SQLite;
   * one statement per 1000 rows on PostgreSQL). With a writer thread the
   * packed entries' buffers are handed over and become rows there; they
   * come back with the answer (or, without one, are handed back as they
   * are) for the caller to pack again. Once called, the caller leaves
   * `packed` alone until then.
   */
  async insert(
    batch: LogEntry[],
    packed?: PackedChunk,
  ): Promise<PackedChunk | undefined> {
    if (batch.length === 0 && !packed?.rows) return packed;
    if (this.#file) {
      // Rows cross as one JSON string (far cheaper to copy than many small
      // arrays); packed entries by handing over their buffers (the caller
      // must not use them after this).
      return await this.#post(
        {
          table: '"mb_logs"',
          rows: batch.length > 0
            ? JSON.stringify(batch.map(entryRow))
            : undefined,
          packed: packed?.rows ? packed : undefined,
          instance: INSTANCE,
        },
        packed?.rows
          ? [packed.nums.buffer, packed.lens.buffer, packed.chars.buffer]
          : [],
      );
    }
    const rows = batch.map(entryRow);
    if (packed) unpackRequests(packed, rows);
    const cols = LOG_COLUMNS.map((c) => `"${c}"`).join(", ");
    if (this.storage.dialect.name === "postgres") {
      // One JSON parameter per batch: one round trip, unpacked by the server.
      const typed = LOG_COLUMNS.map((c, i) =>
        c === "level_n" || c === "status"
          ? `(r->>${i})::bigint`
          : c === "duration_ms"
          ? `(r->>${i})::double precision`
          : `r->>${i}`
      );
      const sql = `INSERT INTO "mb_logs" (${cols}) SELECT ${
        typed.join(", ")
      } FROM jsonb_array_elements((?::text)::jsonb) AS r`;
      for (let i = 0; i < rows.length; i += 1000) {
        // One text parameter, made by JSON.stringify (postgres.js would walk
        // the arrays itself, far slower); the server casts it to jsonb.
        await this.storage.run(sql, [JSON.stringify(rows.slice(i, i + 1000))]);
      }
      return packed;
    }
    // SQLite without a file (tests): multi-row VALUES in one transaction.
    const row = `(${LOG_COLUMNS.map(() => "?").join(", ")})`;
    await this.storage.transaction(async (tx) => {
      for (let i = 0; i < rows.length; i += 100) {
        const chunk = rows.slice(i, i + 100);
        await tx.run(
          `INSERT INTO "mb_logs" (${cols}) VALUES ${
            chunk.map(() => row).join(", ")
          }`,
          chunk.flat() as SqlValue[],
        );
      }
    });
    return packed;
  }

  /** Reads a page, newest first. */
  async query(q: LogQuery): Promise<LogPage> {
    const conds: string[] = [];
    const params: SqlValue[] = [];
    const add = (sql: string, ...values: SqlValue[]) => {
      conds.push(sql);
      params.push(...values);
    };
    if (q.after) add(`"id" < ?`, q.after);
    // Request rows store no level name: filter on the rank.
    if (q.level && isLevel(q.level)) add(`"level_n" = ?`, levelRank(q.level));
    if (q.min_level && isLevel(q.min_level)) {
      add(`"level_n" >= ?`, levelRank(q.min_level));
    }
    if (q.type) add(`"type" = ?`, q.type);
    if (q.start_date) add(`"id" >= ?`, logIdFloor(Date.parse(q.start_date)));
    if (q.end_date) add(`"id" < ?`, logIdFloor(Date.parse(q.end_date) + 1));
    if (q.search) {
      const like = `%${
        q.search.toLowerCase().replace(/[\\%_]/g, (c) => "\\" + c)
      }%`;
      // A request row's message is made from its method, path and status.
      add(
        `(LOWER(CASE WHEN "message" = '' AND "type" = 'request' THEN "method" || ' ' || "path" || ' ' || "status" ELSE "message" END) LIKE ? ESCAPE '\\' OR LOWER(COALESCE("path", '')) LIKE ? ESCAPE '\\')`,
        like,
        like,
      );
    }
    const where = conds.length ? ` WHERE ${conds.join(" AND ")}` : "";
    const rows = await this.storage.query(
      `SELECT * FROM "mb_logs"${where} ORDER BY "id" DESC LIMIT ${q.limit + 1}`,
      params,
    );
    const has_more = rows.length > q.limit;
    const items = rows.slice(0, q.limit).map((r) =>
      rowEntry(LOG_COLUMNS.map((c) => r[c] as LogRow[number]))
    );
    return {
      items,
      items_count: items.length,
      limit: q.limit,
      has_more,
      cursor: has_more && items.length ? items[items.length - 1].id : null,
    };
  }

  /** Deletes entries older than `days` and beyond `maxRows`. */
  async prune(days: number, maxRows: number): Promise<void> {
    const floor = logIdFloor(Date.now() - days * 86_400_000);
    if (this.#file) {
      // On the writer thread: counting past maxRows rows must not pause requests.
      await this.#post({ prune: { floor, maxRows } });
      return;
    }
    await this.storage.run(`DELETE FROM "mb_logs" WHERE "id" < ?`, [floor]);
    const rows = await this.storage.query(
      `SELECT "id" FROM "mb_logs" ORDER BY "id" DESC LIMIT 1 OFFSET ${
        Math.max(0, Math.floor(maxRows))
      }`,
    );
    if (rows[0]) {
      await this.storage.run(`DELETE FROM "mb_logs" WHERE "id" <= ?`, [
        String(rows[0].id),
      ]);
    }
  }
}
