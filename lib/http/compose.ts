/**
 * Middleware as an onion: each layer wraps the next.
 *
 * @module
 */

/** A layer: may act before and after `next()`. */
export type Middleware<C> = (
  ctx: C,
  next: () => Promise<Response>,
) => Promise<Response>;

/**
 * Composes middleware around a final handler.
 *
 * @example
 * ```ts
 * import { compose } from "moonbase/lib/http/compose.ts";
 * const order: string[] = [];
 * const run = compose<null>([
 *   async (_c, next) => { order.push("a"); const r = await next(); order.push("a'"); return r; },
 * ], () => { order.push("h"); return Promise.resolve(new Response("ok")); });
 * await run(null);
 * console.assert(order.join() === "a,h,a'");
 * ```
 */
export function compose<C>(
  layers: Middleware<C>[],
  handler: (ctx: C) => Promise<Response>,
): (ctx: C) => Promise<Response> {
  return (ctx) => {
    const dispatch = (i: number): Promise<Response> =>
      i === layers.length
        ? handler(ctx)
        : layers[i](ctx, () => dispatch(i + 1));
    return dispatch(0);
  };
}
