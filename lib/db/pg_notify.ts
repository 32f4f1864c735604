/**
 * PostgreSQL LISTEN/NOTIFY for news between instances sharing a database
 * (revocations, schema changes). The listener has a connection of its own,
 * never one of the request pool's; when it drops, it listens again (one
 * attempt a second until the database answers) and then calls `onListen`, so the
 * caller can catch up on what was sent meanwhile.
 *
 * @module
 */

// Full specifier, not the import map: embedders import mod.ts without it.
// deno-lint-ignore no-import-prefix
import postgres from "npm:postgres@3.4.7";
import type { Queryable } from "./storage.ts";
import { endClient } from "./pg_client.ts";

/** A channel name: lower-case letters and `_` only (never quoted input). */
const CHANNEL = /^[a-z_]{1,63}$/;

function checkChannel(channel: string): string {
  if (!CHANNEL.test(channel)) {
    throw new Error(`Cannot listen: invalid channel name ${channel}`);
  }
  return channel;
}

/**
 * Sends `payload` on `channel` (delivered when the transaction of `q`
 * commits; at once outside a transaction).
 *
 * @example
 * ```ts ignore
 * await pgNotify(storage, "mb_schema", "");
 * ```
 */
export async function pgNotify(
  q: Queryable,
  channel: string,
  payload: string,
): Promise<void> {
  await q.query(`SELECT pg_notify(?, ?) AS "sent"`, [
    checkChannel(channel),
    payload,
  ]);
}

/** Listens on channels over one dedicated connection, and keeps listening. */
export class PgListener {
  #sql: postgres.Sql;
  #handlers = new Map<string, (payload: string) => void>();
  #onListen: () => void;
  #live = false;
  #closed = false;
  #retry: ReturnType<typeof setTimeout> | undefined;

  /**
   * `onListen` runs each time listening (re)starts: anything sent while
   * the connection was down was missed and must be read from the tables.
   */
  constructor(url: string, onListen: () => void = () => {}) {
    this.#onListen = onListen;
    // `onnotify` is how postgres.js itself delivers notifications to
    // `sql.listen` (connection.js); its type declarations omit it.
    const options = {
      max: 1,
      idle_timeout: 0,
      max_lifetime: null,
      connect_timeout: 5,
      fetch_types: false,
      // Reconnects are paced here (1 s apart); `#schedule` only queues the
      // LISTEN. (A retry timer of our own after postgres.js's would make it
      // compute a negative delay, and Deno warn.)
      backoff: () => 1,
      onnotice: () => {},
      onnotify: (channel: string, payload: string) => {
        try {
          this.#handlers.get(channel)?.(payload);
        } catch {
          // Ignored: a payload its handler cannot use is dropped; the poll
          // of the tables is the safety net for whatever it announced.
        }
      },
      onclose: () => {
        this.#live = false;
        this.#schedule();
      },
    };
    this.#sql = postgres(url, options);
  }

  /** True while the LISTEN connection is up. */
  get live(): boolean {
    return this.#live;
  }

  /** Registers a handler (call before `start`). */
  on(channel: string, handler: (payload: string) => void): void {
    this.#handlers.set(checkChannel(channel), handler);
  }

  /** Starts listening; false (and retrying in the background) when it cannot yet. */
  async start(): Promise<boolean> {
    try {
      await this.#listenAll();
      return true;
    } catch {
      // Not ignored: the caller learns it from `false`, and listening is
      // tried again in the background.
      this.#schedule();
      return false;
    }
  }

  async #listenAll(): Promise<void> {
    for (const channel of this.#handlers.keys()) {
      await this.#sql.unsafe(`LISTEN "${channel}"`);
    }
    this.#live = true;
    this.#onListen();
  }

  #schedule(): void {
    if (this.#closed || this.#retry !== undefined) return;
    this.#retry = setTimeout(async () => {
      this.#retry = undefined;
      if (this.#closed || this.#live) return;
      try {
        await this.#listenAll();
      } catch {
        this.#schedule(); // not ignored: tried again (postgres.js paces it)
      }
    }, 0);
  }

  /** Stops listening and closes the connection. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#retry !== undefined) clearTimeout(this.#retry);
    this.#live = false;
    await endClient(this.#sql, 1);
  }
}
