/**
 * The HTTP server. `Deno.serve` has no header, idle or body timeout, no
 * connection cap, and ends for good when `accept` fails (EMFILE). This one
 * runs its own accept loop over `Deno.listen` and serves each connection
 * with Deno's own HTTP engine (the hyper server `Deno.serve` uses, one per
 * connection), so it can close slow or idle connections, keep the number
 * of connections under a cap, and back off and retry when `accept` fails —
 * it never stops serving because of it.
 *
 * WebSocket upgrades work on it through `upgradeWebSocket` (upgrade.ts), not
 * `Deno.upgradeWebSocket`: each connection holds a duplicate of its socket
 * that an upgraded connection moves to (ordinary requests never touch it).
 *
 * @module
 */

import {
  type ServeHandler,
  type ServeOn,
  Server,
  type ServerLog,
} from "./accept_server.ts";
import type { BodyDeadlines } from "./deadlines.ts";
import type { SharedCount } from "./connections.ts";
import { connectionCap, DEFAULT_LIMITS, type ServerLimits } from "./limits.ts";

export { DEFAULT_LIMITS, type ServerLimits };
export { type ServeHandler, Server, type ServerLog } from "./accept_server.ts";
export {
  type SocketUpgrade,
  type UpgradeOptions,
  upgradeWebSocket,
} from "./upgrade.ts";
export type { ServerSocket } from "./websocket.ts";

export interface ListenOptions {
  port?: number;
  hostname?: string;
  /** Aborting it closes the server and every connection at once. */
  signal?: AbortSignal;
  onListen?: (addr: Deno.NetAddr) => void;
  limits?: Partial<ServerLimits>;
  log?: ServerLog;
  /**
   * The body reads this server's sweeper expires (an app passes its own,
   * `Core.bodies`); default: new ones with the body limits of `limits`,
   * readable as `server.bodies` for handlers to read bodies with.
   */
  bodies?: BodyDeadlines;
  /**
   * WebSocket upgrades on this hardened server with `upgradeWebSocket`
   * (default false). Each connection then holds a second descriptor: a
   * cap that follows the open-file limit is halved.
   */
  webSockets?: boolean;
  /**
   * Sets SO_REUSEPORT (Linux), so that several isolates or processes listen
   * on one port and the kernel spreads connections between them. Needs
   * `--unstable-net` in Deno 2.9 (deno.json sets it).
   */
  reusePort?: boolean;
  /**
   * The count of open connections the cap applies to, when servers share
   * one (several isolates of a process on one port): `limits.maxConnections`
   * is then the cap of them all together.
   */
  connections?: SharedCount;
}

function serveOnConnection(): ServeOn | undefined {
  const d = Deno as unknown as Record<symbol | string, unknown>;
  const internal = d[d.internal as symbol] as
    | Record<string, unknown>
    | undefined;
  const fn = internal?.serveHttpOnConnection;
  return typeof fn === "function" ? fn as ServeOn : undefined;
}

// Process-wide on purpose: the missing feature is the Deno's, not an app's.
let warned = false;

/**
 * Listens on a TCP port and serves `handler` with the limits (defaults for
 * those not given). On a Deno without per-connection serving it falls back
 * to `Deno.serve` and warns once that the limits are not enforced.
 *
 * @example
 * ```ts
 * import { listen } from "moonbase/lib/http/server.ts";
 * import assert from "node:assert/strict";
 * const server = listen(async () => new Response("hi"), {
 *   port: 0, hostname: "127.0.0.1", limits: { idleTimeoutMs: 5_000 },
 * });
 * const res = await fetch(`http://127.0.0.1:${server.addr.port}/`);
 * assert.equal(await res.text(), "hi");
 * await server.shutdown();
 * ```
 */
export function listen(
  handler: ServeHandler,
  options: ListenOptions = {},
): Deno.HttpServer<Deno.NetAddr> {
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  for (const [name, value] of Object.entries(limits)) {
    if (name === "bodyMinRate" ? !(value >= 0) : !(value > 0)) {
      throw new RangeError(`Cannot listen: ${name} must be positive`);
    }
  }
  const log: ServerLog = options.log ??
    ((level, message, data) => console[level](message, data ?? ""));
  const port = options.port ?? 7070;
  const hostname = options.hostname ?? "0.0.0.0";
  const serveOn = serveOnConnection();
  if (!serveOn) {
    if (!warned) {
      warned = true;
      log(
        "warn",
        "Cannot enforce connection limits: this Deno has no per-connection serving; using Deno.serve without header, idle and body timeouts",
      );
    }
    return Deno.serve({
      port,
      hostname,
      signal: options.signal,
      reusePort: options.reusePort,
      onListen: options.onListen ?? (() => {}),
    }, handler);
  }
  const webSockets = options.webSockets === true;
  limits.maxConnections = connectionCap(limits.maxConnections, webSockets);
  const listener = Deno.listen({
    port,
    hostname,
    transport: "tcp",
    ...(options.reusePort ? { reusePort: true } : {}),
  });
  const server = new Server(
    listener,
    serveOn,
    handler,
    limits,
    log,
    options.bodies,
    webSockets,
    options.connections,
  );
  const signal = options.signal;
  if (signal) {
    if (signal.aborted) server.close();
    else signal.addEventListener("abort", () => server.close(), { once: true });
  }
  options.onListen?.(server.addr);
  return server;
}
