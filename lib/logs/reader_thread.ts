/**
 * The request thread's side of the log reader thread (reader_worker.ts):
 * started at the first read, one read at a time there, each answered by
 * its id. A failed read rejects with the typed error the reader sent; a
 * reader that died (an uncaught error, a message it could not read) fails
 * every read waiting on it with a 503 and is replaced at the next read;
 * `close()` ends the thread (a live Worker would keep the process running)
 * and fails what was waiting, and every read after it. Never a hang.
 *
 * @module
 */

import { type ErrorCode, MoonbaseError } from "../errors.ts";
import type { LogQuery } from "./log_query.ts";
import type { CountRange } from "./log_read.ts";

/** A read for the reader thread: a page, counts per bucket, or an entry by id. */
export type ReadJob =
  | { page: LogQuery }
  | { count: CountRange }
  | { entry: string };

/** A failed read, as the reader thread sends it. */
export interface ReadFailure {
  message: string;
  /** Set when the failure is a MoonbaseError (its code and headers). */
  code?: ErrorCode;
  headers?: Record<string, string>;
}

/** The reader thread's answer to one read. */
export interface ReadReply {
  id: number;
  result?: unknown;
  error?: ReadFailure;
}

/** The reader thread's module. */
const READER_URL = new URL("./reader_worker.ts", import.meta.url).href;

/** The typed error of a failed read. */
function readError(f: ReadFailure): Error {
  if (f.code) return new MoonbaseError(f.code, f.message, null, f.headers);
  // Not one the API knows (a driver's own failure): a 500, its text in the
  // server's report only.
  return new Error(`Cannot read logs: ${f.message}`);
}

/** Reads on a thread of their own, against one SQLite log file. */
export class ReaderThread {
  readonly #file: string;
  readonly #url: string;
  #worker: Worker | undefined;
  #reads = new Map<
    number,
    { ok: (v: unknown) => void; fail: (err: Error) => void }
  >();
  #next = 0;
  #closed = false;

  /**
   * Reads `file`; `url` is the thread's module (reader_worker.ts unless a
   * test gives another).
   */
  constructor(file: string, url: string = READER_URL) {
    this.#file = file;
    this.#url = url;
  }

  /** Runs a read on the thread (starting it when there is none). */
  read<T>(job: ReadJob): Promise<T> {
    if (this.#closed) {
      return Promise.reject(
        new MoonbaseError(
          "unavailable",
          "Cannot read logs: the server is stopping",
        ),
      );
    }
    const worker = this.#worker ?? this.#start();
    const id = ++this.#next;
    return new Promise<T>((ok, fail) => {
      this.#reads.set(id, { ok: (v) => ok(v as T), fail });
      worker.postMessage({ ...job, id, path: this.#file });
    });
  }

  #start(): Worker {
    const worker = new Worker(this.#url, { type: "module" });
    worker.onmessage = (e: MessageEvent<ReadReply>) => {
      const done = this.#reads.get(e.data.id);
      this.#reads.delete(e.data.id);
      if (!done) return;
      if (e.data.error) done.fail(readError(e.data.error));
      else done.ok(e.data.result);
    };
    // The thread is gone (an uncaught error ends it) or cannot be trusted
    // (an answer it sent could not be read, so which read it answered is
    // unknown): whatever waits on it fails now, the next read starts
    // another. Deno prints the uncaught error itself.
    worker.onerror = (e: ErrorEvent) => {
      e.preventDefault(); // else it would end the whole process
      this.#lost(worker, e.message);
    };
    worker.onmessageerror = () =>
      this.#lost(worker, "an answer could not be read");
    this.#worker = worker;
    return worker;
  }

  /** Ends `worker` and fails the reads waiting on it. */
  #lost(worker: Worker, reason: string): void {
    if (this.#worker !== worker) return;
    worker.terminate();
    this.#worker = undefined;
    const err = new MoonbaseError(
      "unavailable",
      "Cannot read logs: the log reader thread stopped; try again",
      null,
      { "retry-after": "1" },
    );
    err.cause = reason;
    this.#failAll(err);
  }

  #failAll(err: Error): void {
    const reads = [...this.#reads.values()];
    this.#reads.clear();
    for (const r of reads) r.fail(err);
  }

  /** Ends the thread; reads waiting on it, and any after, fail at once. */
  close(): void {
    this.#closed = true;
    this.#worker?.terminate();
    this.#worker = undefined;
    this.#failAll(
      new MoonbaseError(
        "unavailable",
        "Cannot read logs: the server is stopping",
      ),
    );
  }
}
