/**
 * The connection limits of the server, their defaults, and their values
 * from an app's config (seconds there, milliseconds here).
 *
 * @module
 */

/** Limits of a server (times in milliseconds). */
export interface ServerLimits {
  /** A new connection must send a complete request head within this. */
  headerTimeoutMs: number;
  /** A connection with no request in progress is closed after this. */
  idleTimeoutMs: number;
  /** Longest pause while a request body arrives (then 408). */
  bodyTimeoutMs: number;
  /** Longest time a whole request body may take (then 408). */
  bodyDeadlineMs: number;
  /** Least average body rate in bytes/s once a body took `bodyTimeoutMs` (0: none). */
  bodyMinRate: number;
  /** Most connections open at once. */
  maxConnections: number;
}

/** Defaults of the limits. */
export const DEFAULT_LIMITS: ServerLimits = {
  headerTimeoutMs: 10_000,
  idleTimeoutMs: 30_000,
  bodyTimeoutMs: 30_000,
  bodyDeadlineMs: 600_000,
  bodyMinRate: 500,
  maxConnections: 1024,
};

/** Time limits of a resolved config (seconds) as server limits. */
export interface LimitConfig {
  headerTimeout: number;
  idleTimeout: number;
  bodyTimeout: number;
  bodyDeadline: number;
  bodyMinRate: number;
  maxConnections: number;
}

/**
 * The server limits of a config.
 *
 * @example
 * ```ts
 * import { limitsOf } from "moonbase/lib/http/limits.ts";
 * import assert from "node:assert/strict";
 * const l = limitsOf({
 *   headerTimeout: 10, idleTimeout: 30, bodyTimeout: 30, bodyDeadline: 600,
 *   bodyMinRate: 500, maxConnections: 100,
 * });
 * assert.equal(l.idleTimeoutMs, 30_000);
 * ```
 */
export function limitsOf(c: LimitConfig): ServerLimits {
  return {
    headerTimeoutMs: c.headerTimeout * 1000,
    idleTimeoutMs: c.idleTimeout * 1000,
    bodyTimeoutMs: c.bodyTimeout * 1000,
    bodyDeadlineMs: c.bodyDeadline * 1000,
    bodyMinRate: c.bodyMinRate,
    maxConnections: c.maxConnections,
  };
}

/**
 * The default connection cap: 1024, lowered below the open-file limit when
 * Linux says it is smaller (`/proc/self/limits`, read only when permitted),
 * leaving 64 descriptors to the database, logs and files.
 */
export function defaultMaxConnections(): number {
  try {
    const path = "/proc/self/limits";
    if (
      Deno.permissions.querySync({ name: "read", path }).state !== "granted"
    ) {
      return DEFAULT_LIMITS.maxConnections;
    }
    const m = /^Max open files\s+(\d+)/m.exec(Deno.readTextFileSync(path));
    if (!m) return DEFAULT_LIMITS.maxConnections;
    return Math.max(
      16,
      Math.min(DEFAULT_LIMITS.maxConnections, Number(m[1]) - 64),
    );
  } catch {
    // Not Linux, or /proc unreadable: the default cap, as documented above.
    return DEFAULT_LIMITS.maxConnections;
  }
}

/**
 * The connection cap a server enforces: `maxConnections`, and with
 * WebSockets (two descriptors a connection) at most half of what the
 * open-file limit holds when that limit is below the default.
 */
export function connectionCap(
  maxConnections: number,
  webSockets: boolean,
): number {
  if (!webSockets) return maxConnections;
  const fds = defaultMaxConnections();
  if (fds >= DEFAULT_LIMITS.maxConnections) return maxConnections;
  return Math.min(maxConnections, Math.max(16, Math.floor(fds / 2)));
}

/**
 * How many of a server's `cap` connections realtime streams may hold: the
 * rest (a tenth, at least one) is kept for ordinary requests, so streams
 * never take the last slots.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { streamCap } from "moonbase/lib/http/limits.ts";
 * assert.equal(streamCap(1024), 921);
 * assert.equal(streamCap(120), 108);
 * assert.equal(streamCap(4), 3);
 * assert.equal(streamCap(1), 0);
 * ```
 */
export function streamCap(cap: number): number {
  return Math.max(0, cap - Math.max(1, Math.ceil(cap / 10)));
}
