/**
 * Route groups bound to a guard once: `guarded(r, requireAdmin).add(…)`
 * registers handlers that run only after the guard passed, so no handler of
 * the group can forget it.
 *
 * @module
 */

import type { Context, Handler } from "./context.ts";

/** Something routes can be added to (a `Router` or another group). */
export interface RouteTarget<A> {
  add(method: string, pattern: string, handler: Handler<A>): unknown;
}

/**
 * A group whose handlers run after `guard(ctx)` resolved; a guard that
 * throws answers for the handler.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Router } from "moonbase/lib/http/router.ts";
 * import type { Handler } from "moonbase/lib/http/context.ts";
 * import { guarded } from "moonbase/lib/http/route_group.ts";
 * const r = new Router<Handler<unknown>>();
 * const calls: string[] = [];
 * guarded<unknown>(r, () => {
 *   calls.push("guard");
 *   return Promise.resolve();
 * }).add("GET", "/x", () => new Response("ok"));
 * const m = r.match("GET", "/x");
 * assert.ok(m.kind === "found");
 * await m.handler({} as never);
 * assert.deepEqual(calls, ["guard"]);
 * ```
 */
export function guarded<A>(
  r: RouteTarget<A>,
  guard: (ctx: Context<A>) => Promise<unknown>,
): RouteTarget<A> {
  return {
    add(method, pattern, handler) {
      r.add(method, pattern, async (ctx) => {
        await guard(ctx);
        return await handler(ctx);
      });
      return this;
    },
  };
}
