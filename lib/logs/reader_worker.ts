/**
 * Worker that answers the log store's reads on SQLite (log_read.ts) on a
 * read-only connection of its own to the log file, so a search over
 * millions of entries (a scan of rows, blocks decoded and matched) runs
 * beside the request thread instead of on it. The connection has the text
 * functions every Moonbase connection has (lib/db/sqlite_text.ts: the
 * search folds text with `mb_fold`). Messages (reader_thread.ts):
 * `{id, path, page}` (a `LogQuery`), `{id, path, count}` (a `CountRange`)
 * or `{id, path, entry}` (an id) → `{id, result}` or `{id, error}`. One
 * read at a time.
 *
 * @module
 */

import { DatabaseSync, type StatementSync } from "node:sqlite";
import type { Row, SqlValue } from "../db/storage.ts";
import { registerTextFunctions } from "../db/sqlite_text.ts";
import { busyError, staleSchema } from "../db/sqlite_errors.ts";
import { MoonbaseError } from "../errors.ts";
import {
  countRequests,
  entryById,
  type LogSource,
  readPage,
} from "./log_read.ts";
import type { ReadFailure, ReadJob } from "./reader_thread.ts";

/** A read and where to send its answer. */
type Job = ReadJob & { id: number; path: string };

/** The worker's global scope, as far as this file uses it. */
const scope = self as unknown as {
  onmessage: ((e: MessageEvent<Job>) => void) | null;
  postMessage(message: unknown): void;
};

let db: DatabaseSync | undefined;
const statements = new Map<string, StatementSync>();

/** The connection as the reads see it (prepared statements kept a while). */
const source: LogSource = {
  pg: false,
  query(sql: string, params: SqlValue[] = []): Promise<Row[]> {
    let st = statements.get(sql);
    if (!st) {
      if (statements.size >= 64) statements.clear();
      st = db!.prepare(sql);
      statements.set(sql, st);
    }
    return Promise.resolve(st.all(...params as never[]) as Row[]);
  },
};

/** Opens the log file for reading, with the text functions. */
function open(path: string): DatabaseSync {
  const conn = new DatabaseSync(path, { readOnly: true });
  try {
    conn.exec("PRAGMA busy_timeout=5000");
    registerTextFunctions(conn);
  } catch (err) {
    conn.close();
    throw err;
  }
  return conn;
}

/** A failure as the request thread gets it: typed as the storage would type it. */
function failure(err: unknown): ReadFailure {
  const mapped = err instanceof MoonbaseError
    ? err
    : busyError(err) ?? staleSchema(err);
  if (mapped instanceof MoonbaseError) {
    return {
      message: mapped.message,
      code: mapped.code,
      headers: mapped.headers,
    };
  }
  return { message: err instanceof Error ? err.message : String(err) };
}

/**
 * Reads run one after another: block reading yields between blocks
 * (block_read.ts), and one connection's statements are not shared.
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
    db ??= open(job.path);
    const result = "page" in job
      ? await readPage(source, job.page)
      : "count" in job
      ? await countRequests(source, job.count)
      : await entryById(source, job.entry);
    scope.postMessage({ id: job.id, result });
  } catch (err) {
    scope.postMessage({ id: job.id, error: failure(err) });
  }
}
