/**
 * Worker that writes SQLite log batches on its own connection and thread,
 * so inserting thousands of log rows never pauses request handling.
 * Messages: `{id, path, table, rows, packed, instance}` (log rows as JSON,
 * packed request entries as their transferred buffers; see packed.ts) or `{id, path, prune}` → reply
 * `{id, error?}`. Packed entries get their ids and rows here, off the
 * request thread.
 *
 * @module
 */

import { DatabaseSync, type StatementSync } from "node:sqlite";
import {
  LOG_COLUMNS,
  type LogRow,
  REQUEST_ROW_SQL,
  requestParams,
} from "./rows.ts";
import type { PackedChunk } from "./packed.ts";
import { BLOCK_INSERT_SQL, requestBlock } from "./block.ts";
import { pruneLogs } from "./prune.ts";

/** An insert (`rows`: JSON of rows, `packed`: packed entries) or a prune. */
interface Job {
  id: number;
  path: string;
  table?: string;
  rows?: string;
  packed?: PackedChunk;
  instance?: string;
  prune?: { floor: string; maxRows: number };
}

/** The worker's global scope, as far as this file uses it. */
const scope = self as unknown as {
  onmessage: ((e: MessageEvent<Job>) => void) | null;
  postMessage(message: unknown, transfer?: Transferable[]): void;
};

let db: DatabaseSync | undefined;
const statements = new Map<string, StatementSync>();
let blockInsert: StatementSync | undefined;
const ROW = `(${Array(LOG_COLUMNS.length).fill("?").join(", ")})`;
const CHUNK = 100;

/** `INSERT` of `n` rows shaped `row` (prepared once per shape and count). */
function statement(table: string, row: string, n: number): StatementSync {
  const key = `${row}\0${n}`;
  let st = statements.get(key);
  if (!st) {
    st = db!.prepare(
      `INSERT INTO ${table} VALUES ${Array(n).fill(row).join(", ")}`,
    );
    statements.set(key, st);
  }
  return st;
}

/**
 * Inserts packed request entries: one block (block.ts `requestBlock`) from `BLOCK_MIN`
 * entries on, else `CHUNK` rows per statement.
 */
function insertRequests(table: string, packed: PackedChunk, tag: string) {
  const block = requestBlock(packed, tag);
  if (block) {
    blockInsert ??= db!.prepare(BLOCK_INSERT_SQL);
    blockInsert.run(
      block.lo,
      block.hi,
      block.rows,
      block.data,
    );
    return;
  }
  requestParams(packed, tag, (params) => {
    statement(table, REQUEST_ROW_SQL, params.length / 10).run(
      ...params as never[],
    );
  }, CHUNK);
}

/** Answers a job, handing the packed entries' buffers back to be reused. */
function answer(job: Job, error?: string): void {
  const p = job.packed;
  scope.postMessage(
    { id: job.id, error, packed: p },
    p ? [p.nums.buffer, p.lens.buffer, p.chars.buffer] : [],
  );
}

/** The worker's connection as pruning sees it (synchronous calls). */
const pruneDb = {
  all: (sql: string, params: (string | number)[]) =>
    db!.prepare(sql).all(...params) as Record<string, unknown>[],
  run: (sql: string, params: (string | number)[]) =>
    db!.prepare(sql).run(...params),
};

/**
 * Jobs run one after another: pruneLogs is async (shared with PostgreSQL),
 * and a message already queued is delivered between its awaits, where an
 * insert's `BEGIN IMMEDIATE` would fail inside the prune's transaction.
 */
let jobs: Promise<void> = Promise.resolve();
scope.onmessage = (e: MessageEvent<Job>) => {
  const job = e.data;
  // run() answers every job itself; the catch keeps one failure to answer
  // from stopping the jobs behind it.
  jobs = jobs.then(() => run(job)).catch(() => {});
};

async function run(job: Job): Promise<void> {
  try {
    if (!db) {
      db = new DatabaseSync(job.path);
      db.exec(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000",
      );
    }
    db.exec("BEGIN IMMEDIATE");
    try {
      if (job.prune) {
        await pruneLogs(pruneDb, job.prune.floor, job.prune.maxRows);
      }
      const rows: LogRow[] = job.rows ? JSON.parse(job.rows) : [];
      for (let i = 0; i < rows.length; i += CHUNK) {
        const chunk = rows.slice(i, i + CHUNK);
        statement(job.table!, ROW, chunk.length).run(...chunk.flat());
      }
      if (job.packed) {
        insertRequests(job.table!, job.packed, job.instance!);
      }
      db.exec("COMMIT");
    } catch (err) {
      if (db.isTransaction) db.exec("ROLLBACK");
      throw err;
    }
    answer(job);
  } catch (err) {
    answer(job, err instanceof Error ? err.message : String(err));
  }
}
