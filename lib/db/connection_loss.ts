/**
 * Which errors mean "a connection went away" (a database socket reset, a
 * PostgreSQL restart), as opposed to a bug. Only these may be swallowed when
 * nobody awaits them: anything else is the embedding program's to see.
 *
 * @module
 */

import { StorageUnavailableError } from "../errors.ts";
import { unreachable } from "./pg_client.ts";

const SOCKET_ERRORS = [
  Deno.errors.ConnectionReset,
  Deno.errors.ConnectionAborted,
  Deno.errors.ConnectionRefused,
  Deno.errors.BrokenPipe,
  Deno.errors.NotConnected,
  Deno.errors.TimedOut,
];

/**
 * True when `err` says a connection was lost or refused.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isConnectionLoss } from "moonbase/lib/db/connection_loss.ts";
 * assert.equal(isConnectionLoss(new Deno.errors.ConnectionReset("x")), true);
 * assert.equal(isConnectionLoss(Object.assign(new Error("x"), { code: "ECONNRESET" })), true);
 * assert.equal(isConnectionLoss(new TypeError("a bug")), false);
 * ```
 */
export function isConnectionLoss(err: unknown): boolean {
  return err instanceof StorageUnavailableError || unreachable(err) ||
    SOCKET_ERRORS.some((E) => err instanceof E);
}
