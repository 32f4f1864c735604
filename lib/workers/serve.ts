/**
 * Serving one isolate's app: the hardened server with the app's limits, as
 * `app.serve` does, plus what an isolate of `serve --workers N` needs: the
 * port shared with SO_REUSEPORT, the other isolates' changes read before a
 * request is handled (`Core.sync.fresh()`), and an `X-Moonbase-Worker`
 * header naming the isolate by its index (nothing else: no pid, no path).
 *
 * @module
 */

import type { InternalApp } from "../internal_app.ts";
import { listen, type ServeHandler } from "../http/server.ts";
import { limitsOf } from "../http/limits.ts";
import { json } from "../http/envelope.ts";
import { kdfGate } from "../auth/password.ts";
import { connectionCount } from "../cluster/link.ts";

/** The response header naming the isolate that answered (with several). */
export const WORKER_HEADER = "x-moonbase-worker";

/** Where and how an isolate listens. */
export interface IsolateListen {
  port: number;
  hostname: string;
  /** Several isolates share the port (SO_REUSEPORT). */
  shared: boolean;
}

/** Listens for `app`; with `shared`, as one isolate of several. */
export function serveIsolate(
  app: InternalApp,
  where: IsolateListen,
): Deno.HttpServer<Deno.NetAddr> {
  if (where.shared) needReusePort();
  // The process's cores are shared out: each isolate has a gate of its own.
  kdfGate.share(app.config.peers?.count ?? 1);
  const handler: ServeHandler = where.shared
    ? isolateHandler(app)
    : (req, info) => app.handler(req, info);
  return listen(handler, {
    port: where.port,
    hostname: where.hostname,
    reusePort: where.shared,
    // The cap is the process's: every isolate counts into one total.
    connections: where.shared && app.config.peers
      ? connectionCount(app.config.peers)
      : undefined,
    limits: limitsOf(app.config),
    bodies: app.bodies,
    webSockets: app.config.webSocket,
    log: (level, message, data) => app.log[level](message, data),
  });
}

/**
 * Throws unless this Deno lets `Deno.listen` set SO_REUSEPORT: Deno 2.9
 * asks for `--unstable-net`, and without it ends the process (exit 70) at
 * the first `reusePort` instead of throwing. The unstable network API is
 * there exactly when the flag is.
 */
export function needReusePort(): void {
  const d = Deno as unknown as Record<string, unknown>;
  if (typeof d.listenDatagram !== "function") {
    throw new Error(
      "Cannot serve from several workers: SO_REUSEPORT needs Deno's --unstable-net flag (deno.json sets it; add it to your own deno run)",
    );
  }
}

/** The app's handler, after catching up with the other isolates, naming this one. */
function isolateHandler(app: InternalApp): ServeHandler {
  const index = String(app.config.peers?.index ?? 0);
  const name = (res: Response): Response => {
    try {
      if (res.status !== 101) res.headers.set(WORKER_HEADER, index);
    } catch { /* immutable headers: left as they are */ }
    return res;
  };
  return async (req, info) => {
    const behind = app.sync.fresh();
    if (behind) {
      // Not caught up (the database did not answer): a revocation or a rule
      // another worker made may be missing here, so nothing is served now.
      const failed = await behind.then(() => false, () => true);
      if (failed) {
        return name(json(
          503,
          null,
          { "retry-after": "1" },
          "Cannot answer now: this worker cannot read the latest changes",
        ));
      }
    }
    return name(await app.handler(req, info));
  };
}

/**
 * The serving process is Moonbase's own: no stray rejection may end it
 * (logged instead). An uncaught exception still ends the isolate.
 */
export function keepServing(app: InternalApp): void {
  globalThis.addEventListener("unhandledrejection", (e) => {
    e.preventDefault();
    const err = e.reason;
    app.log.error("unhandled rejection", {
      stack: err instanceof Error ? err.stack ?? err.message : String(err),
    });
  });
}
