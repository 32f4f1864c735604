/**
 * Login and sign-up rate limits: a fixed one-minute window per client IP,
 * counted in the database (`mb_ratelimit`) so every instance on one database
 * shares it and memory stays bounded whatever the number of IPs.
 *
 * @module
 */

import type { Storage } from "../db/storage.ts";
import { current } from "../records/write_scope.ts";
import { MoonbaseError } from "../errors.ts";
import { clientKey } from "./client_key.ts";

/** Attempts allowed per window, and the window. */
export const LOGIN_LIMIT = 5, WINDOW_MS = 60_000;

/**
 * Sign-ups (creates on an auth entity by anyone but an admin) allowed per
 * window and IP: each costs a scrypt, and each answers whether an email is
 * taken, so this also bounds email probing.
 */
export const SIGNUP_LIMIT = 10;

/** The outcome of counting one attempt. */
export interface RateState {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds when the window resets. */
  reset: number;
  /** Seconds to wait (when not allowed). */
  retryAfter: number;
  /**
   * The first refused attempt of this window: worth one log line (each
   * refused request is in the request log already; a line per refusal would
   * let a client flood the application log).
   */
  firstRefusal: boolean;
}

/**
 * Counts attempts per key (`login:<ip>`, `signup:<ip>`); the limit is
 * `LOGIN_LIMIT` unless told.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SqliteStorage } from "moonbase/lib/db/sqlite.ts";
 * import { ensureSystemTables } from "moonbase/lib/schema/system.ts";
 * import { LoginLimiter, SIGNUP_LIMIT } from "moonbase/lib/auth/rate_limit.ts";
 * const db = new SqliteStorage(":memory:");
 * await ensureSystemTables(db);
 * const limiter = new LoginLimiter(db);
 * for (let i = 0; i < 5; i++) assert.ok((await limiter.hit("login:1.2.3.4")).allowed);
 * assert.equal((await limiter.hit("login:1.2.3.4")).allowed, false);
 * const signup = await limiter.hit("signup:1.2.3.4", SIGNUP_LIMIT);
 * assert.deepEqual([signup.allowed, signup.limit, signup.remaining], [true, 10, 9]);
 * await db.close();
 * ```
 */
export class LoginLimiter {
  #store: Storage;
  #hits = 0;

  /** Uses the storage's `mb_ratelimit`. */
  constructor(store: Storage) {
    this.#store = store;
  }

  /** Counts one attempt for `key` and says whether it may proceed. */
  async hit(
    key: string,
    limit: number = LOGIN_LIMIT,
    now: number = Date.now(),
  ): Promise<RateState> {
    // Inside a record hook's write (a sign-up made with `{ as }`), through
    // that write's transaction: on SQLite a statement beside it would wait
    // for the write, which waits for the hook.
    const store = current(this.#store);
    const rows = await store.query(
      `INSERT INTO "mb_ratelimit" ("key", "window_start", "count") VALUES (?, ?, 1)
       ON CONFLICT ("key") DO UPDATE SET
         "count" = CASE WHEN "mb_ratelimit"."window_start" > ? THEN "mb_ratelimit"."count" + 1 ELSE 1 END,
         "window_start" = CASE WHEN "mb_ratelimit"."window_start" > ? THEN "mb_ratelimit"."window_start" ELSE excluded."window_start" END
       RETURNING "count", "window_start"`,
      [limitKey(key).slice(0, 200), now, now - WINDOW_MS, now - WINDOW_MS],
    );
    if (++this.#hits % 500 === 0) {
      await store.run(
        `DELETE FROM "mb_ratelimit" WHERE "window_start" < ?`,
        [now - WINDOW_MS],
      );
    }
    const count = Number(rows[0]?.count ?? 1);
    const start = Number(rows[0]?.window_start ?? now);
    const resetMs = start + WINDOW_MS;
    return {
      allowed: count <= limit,
      limit,
      remaining: Math.max(0, limit - count),
      reset: Math.ceil(resetMs / 1000),
      retryAfter: Math.max(1, Math.ceil((resetMs - now) / 1000)),
      firstRefusal: count === limit + 1,
    };
  }
}

/** The `X-RateLimit-*` headers of a state. */
export function rateHeaders(s: RateState): Record<string, string> {
  const h: Record<string, string> = {
    "X-RateLimit-Limit": String(s.limit),
    "X-RateLimit-Remaining": String(s.remaining),
    "X-RateLimit-Reset": String(s.reset),
  };
  if (!s.allowed) h["Retry-After"] = String(s.retryAfter);
  return h;
}

/**
 * The 429 of a refused attempt: it says how long to wait, in its text and in
 * `Retry-After`, with the `X-RateLimit-*` headers.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { rateLimited } from "moonbase/lib/auth/rate_limit.ts";
 * const e = rateLimited("log in", "attempts", {
 *   allowed: false, limit: 5, remaining: 0, reset: 1, retryAfter: 42, firstRefusal: true,
 * });
 * assert.equal(e.message, "Cannot log in: too many attempts from this address; try again in 42 seconds");
 * assert.equal(e.headers["Retry-After"], "42");
 * ```
 */
export function rateLimited(
  action: string,
  what: string,
  s: RateState,
): MoonbaseError {
  const wait = s.retryAfter === 1 ? "1 second" : `${s.retryAfter} seconds`;
  return new MoonbaseError(
    "rate_limited",
    `Cannot ${action}: too many ${what} from this address; try again in ${wait}`,
    null,
    rateHeaders(s),
  );
}

/** `<kind>:<address>` with the address reduced to what limits count by. */
function limitKey(key: string): string {
  const at = key.indexOf(":");
  return at < 0 ? key : key.slice(0, at + 1) + clientKey(key.slice(at + 1));
}
