/**
 * Middleware: functions that wrap every request, built-in routes included,
 * as an onion (the first registered is the outermost). Each gets the
 * request's context and `next()`, which runs the rest of the chain and the
 * route, and returns the response (its own, or `next()`'s).
 *
 * @module
 */

import type { Context, Handler } from "./context.ts";
import type { Router } from "./router.ts";

/** Wraps a request. */
export type Middleware<A> = (
  ctx: Context<A>,
  next: () => Promise<Response>,
) => Promise<Response> | Response;

/** What extensions add to the pipeline; swapped as a whole on reload. */
export interface HttpExtensions<A> {
  readonly middleware: readonly Middleware<A>[];
  /** Routes consulted before the built-in ones (never instead of another method's). */
  readonly routes?: Router<Handler<A>>;
  /**
   * Run each request inside its request scope (`request_scope.ts`): set
   * when scripts are loaded, whose code may act `{ as }` the caller.
   */
  readonly scoped?: boolean;
}

/**
 * Runs `chain` around `last`, in order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { compose } from "moonbase/lib/http/middleware.ts";
 * const seen: string[] = [];
 * const res = await compose<null>([
 *   async (_ctx, next) => { seen.push("a"); const r = await next(); seen.push("a'"); return r; },
 *   async (_ctx, next) => { seen.push("b"); return await next(); },
 * ], {} as never, () => { seen.push("route"); return Promise.resolve(new Response("ok")); });
 * assert.equal(await res.text(), "ok");
 * assert.deepEqual(seen, ["a", "b", "route", "a'"]);
 * ```
 */
export function compose<A>(
  chain: readonly Middleware<A>[],
  ctx: Context<A>,
  last: () => Promise<Response>,
): Promise<Response> {
  const step = async (i: number): Promise<Response> => {
    if (i === chain.length) return await last();
    let called = false;
    const res = await chain[i](ctx, () => {
      if (called) {
        return Promise.reject(new Error("Cannot call next() twice"));
      }
      called = true;
      return step(i + 1);
    });
    if (!(res instanceof Response)) {
      throw new Error("Cannot use middleware: it returned no Response");
    }
    return res;
  };
  return step(0);
}
