/**
 * The log store: rows in `mb_logs` and request entries in blocks of
 * `mb_log_blocks` (block.ts: a burst of requests is one binary value);
 * batched inserts, filtered newest-first reads over both with a keyset
 * cursor (log_read.ts), and pruning by age and count. On SQLite it lives in
 * its own file so log writes never contend with data writes; there both
 * run on threads of their own (writer_worker.ts, reader_worker.ts).
 *
 * @module
 */

import type { SqlValue, Storage } from "../db/storage.ts";
import { boundedDdl } from "../db/ddl_lock.ts";
import {
  entryRow,
  INSTANCE,
  LOG_COLUMNS,
  logIdFloor,
  unpackRequests,
} from "./rows.ts";
import type { PackedChunk } from "./packed.ts";
import type { LogEntry } from "./types.ts";
import type { LogPage, LogQuery } from "./log_query.ts";
import { BLOCK_INSERT_SQL, requestBlock } from "./block.ts";
import { BLOCK_TABLE_SQL } from "./block_read.ts";
import {
  type BucketCounts,
  type CountRange,
  countRequests,
  entryById,
  type LogSource,
  readPage,
} from "./log_read.ts";
import { ReaderThread } from "./reader_thread.ts";
import { pruneLogs } from "./prune.ts";

export { type LogPage, type LogQuery, parseLogQuery } from "./log_query.ts";

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
  readonly #reader: ReaderThread | undefined;

  /**
   * Uses `storage` (call `init()` once). With `sqliteFile`, inserts run in a
   * worker thread on their own connection to that file, and reads in
   * another (reader_thread.ts) on a read-only one.
   */
  constructor(storage: Storage, sqliteFile?: string) {
    this.storage = storage;
    this.#file = sqliteFile;
    this.#reader = sqliteFile ? new ReaderThread(sqliteFile) : undefined;
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

  /**
   * Stops the reader thread and the writer thread (after the last insert
   * has been acknowledged).
   */
  close(): void {
    this.#reader?.close();
    this.#worker?.terminate();
    this.#worker = undefined;
    // Jobs still queued on the thread are not done: say so, never hang.
    for (const done of this.#jobs.values()) {
      done({ id: 0, error: "Cannot write logs: the log store is closed" });
    }
    this.#jobs.clear();
  }

  /** Creates the table and indexes. */
  async init(): Promise<void> {
    const d = this.storage.dialect;
    const text = d.columnType("text"),
      int = d.columnType("int"),
      dbl = d.columnType("double");
    // Ids compare by code unit, as JavaScript merges rows and blocks (a
    // PostgreSQL database's own collation may order the tags' cases apart).
    const pg = d.name === "postgres";
    const id = pg ? `${text} COLLATE "C"` : text;
    await this.storage.exec(
      `CREATE TABLE IF NOT EXISTS "mb_logs" ("id" ${id} PRIMARY KEY, "time" ${text} NOT NULL, "level" ${text} NOT NULL, "level_n" ${int} NOT NULL, "type" ${text} NOT NULL, "message" ${text} NOT NULL, "method" ${text}, "path" ${text}, "status" ${int}, "duration_ms" ${dbl}, "ip" ${text}, "auth_id" ${text}, "auth_entity" ${text}, "request_id" ${text}, "data" ${text})${
        d.name === "sqlite" ? " WITHOUT ROWID" : ""
      }`,
    );
    // Ids begin with the time, so time ranges are id ranges: no separate time index.
    await this.storage.exec(`DROP INDEX IF EXISTS "mb_logs_time"`);
    await this.storage.exec(
      BLOCK_TABLE_SQL(pg ? "BYTEA" : "BLOB", id, int),
    );
    await this.storage.exec(
      `CREATE INDEX IF NOT EXISTS "mb_log_blocks_hi" ON "mb_log_blocks" ("hi")`,
    );
    if (pg) await this.#collateIds();
  }

  /** A log table made before ids were declared `COLLATE "C"` is altered. */
  async #collateIds(): Promise<void> {
    const columns = await this.storage.query(
      `SELECT "table_name", "column_name" FROM information_schema.columns WHERE "table_schema" = current_schema() AND (("table_name" = 'mb_logs' AND "column_name" = 'id') OR ("table_name" = 'mb_log_blocks' AND "column_name" IN ('lo', 'hi'))) AND "collation_name" IS DISTINCT FROM 'C'`,
    );
    for (const c of columns) {
      // A session holding the table fails the start after a while instead
      // of holding it up (and every log write queued behind the ALTER).
      await boundedDdl(
        this.storage,
        String(c.table_name),
        (tx) =>
          tx.exec(
            `ALTER TABLE "${c.table_name}" ALTER COLUMN "${c.column_name}" TYPE TEXT COLLATE "C"`,
          ),
      );
    }
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
    const block = packed && requestBlock(packed, INSTANCE);
    if (block) {
      await this.storage.run(BLOCK_INSERT_SQL, [
        block.lo,
        block.hi,
        block.rows,
        block.data,
      ]);
    } else if (packed) unpackRequests(packed, rows);
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

  /** Reads a page, newest first (SQLite: on the reader thread). */
  query(q: LogQuery): Promise<LogPage> {
    return this.#reader
      ? this.#reader.read<LogPage>({ page: q })
      : readPage(this.#source, q);
  }

  /** Counts requests per bucket (log_read.ts `countRequests`). */
  countRequests(r: CountRange): Promise<BucketCounts[]> {
    return this.#reader
      ? this.#reader.read<BucketCounts[]>({ count: r })
      : countRequests(this.#source, r);
  }

  /** The entry with this id, if there is one. */
  entry(id: string): Promise<LogEntry | undefined> {
    return this.#reader
      ? this.#reader.read<LogEntry | undefined>({ entry: id })
      : entryById(this.#source, id);
  }

  /** The storage as the reads on this thread see it. */
  get #source(): LogSource {
    const st = this.storage;
    return {
      pg: st.dialect.name === "postgres",
      query: (sql, params) => st.query(sql, params),
    };
  }

  /** Deletes entries older than `days` and beyond the newest `maxRows` (prune.ts). */
  async prune(days: number, maxRows: number): Promise<void> {
    const floor = logIdFloor(Date.now() - days * 86_400_000);
    if (this.#file) {
      // On the writer thread: counting past maxRows rows must not pause requests.
      await this.#post({ prune: { floor, maxRows } });
      return;
    }
    await pruneLogs(
      {
        all: (sql, params) => this.storage.query(sql, params),
        run: (sql, params) => this.storage.run(sql, params),
      },
      floor,
      maxRows,
    );
  }
}
