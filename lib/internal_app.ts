/**
 * The app behind the public `App` of mod.ts: the instance's services
 * (`Core`, lib/core.ts) with the request handler and the server's methods.
 * It is no public API: `createApp` hands embedders the narrow `App`, and
 * only Moonbase's own code reaches this one through {@link internalApp} —
 * the serving isolates (lib/workers), the `setup(app)` of older scripts and
 * the test harness (tests/_server.ts).
 *
 * @module
 */

import type { Core } from "./core.ts";
import type { Handler } from "./http/context.ts";
import type { ConnInfo } from "./http/handler.ts";

/** An app with its internals: the core plus what mod.ts adds on top. */
export interface InternalApp extends Core {
  /** The request handler (usable with `Deno.serve` or called directly). */
  handler(req: Request, info?: ConnInfo): Promise<Response>;
  /** Adds a custom route (`:params` allowed); it may replace a built-in one. */
  route(method: string, path: string, handler: Handler<Core>): void;
  /** Starts listening (see `App.serve` in mod.ts). */
  serve(
    options?: { port?: number; hostname?: string; signal?: AbortSignal },
  ): Promise<Deno.HttpServer<Deno.NetAddr>>;
  /** Graceful stop (see `App.stop` in mod.ts). */
  stop(server: Deno.HttpServer, timeoutMs?: number): Promise<void>;
}

const internals = new WeakMap<object, InternalApp>();

/** Records the internals behind a public app (mod.ts, once per app). */
export function linkInternalApp(app: object, internal: InternalApp): void {
  internals.set(app, internal);
}

/**
 * The internals behind an app `createApp` made. Throws for anything else:
 * there is no other way to reach them.
 */
export function internalApp(app: object): InternalApp {
  const internal = internals.get(app);
  if (!internal) {
    throw new Error(
      "Cannot reach the internals of this app: it was not made by createApp",
    );
  }
  return internal;
}
