/**
 * The request a piece of code runs inside, for code that does not have the
 * request's context in hand: a script acting `{ as }` the caller calls
 * `Entity.create(data, { as })`, and the record service must still count
 * the sign-up against the client's address, as the records API does.
 *
 * The scope is carried by the async context (AsyncLocalStorage), so it
 * follows the request's work through its awaits and timers. The pipeline
 * enters it only when code other than Moonbase's own can run inside a
 * request (extension scripts, an embedder's routes): the built-in routes
 * hand the address on themselves and pay nothing for it.
 *
 * @module
 */

import { AsyncLocalStorage } from "node:async_hooks";

/** Where a request comes from (a `Context` is one). */
export interface RequestOrigin {
  /** The client's address (the socket peer, or `X-Forwarded-For` with `--trustProxy`). */
  readonly ip: string;
  /** The request's id, for log lines. */
  readonly requestId: string;
}

const scope = new AsyncLocalStorage<RequestOrigin>();

/**
 * Runs `fn` inside the request `origin`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { currentRequest, inRequest } from "moonbase/lib/http/request_scope.ts";
 * const seen = await inRequest({ ip: "203.0.113.9", requestId: "r-1" }, async () => {
 *   await new Promise((r) => setTimeout(r, 0));
 *   return currentRequest()?.ip;
 * });
 * assert.equal(seen, "203.0.113.9");
 * assert.equal(currentRequest(), undefined);
 * ```
 */
export function inRequest<T>(origin: RequestOrigin, fn: () => T): T {
  return scope.run(origin, fn);
}

/** The request the caller runs inside, if any (none in a cron job or a program's own code). */
export function currentRequest(): RequestOrigin | undefined {
  return scope.getStore();
}
