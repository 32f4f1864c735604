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

import { ConnectionTable, type ConnServer } from "./connections.ts";
import {
  canHoldSockets,
  forget,
  register,
  terminate,
  UpgradableConnection,
} from "./upgrade.ts";
import { BodyDeadlines } from "./deadlines.ts";
import {
  DEFAULT_LIMITS,
  defaultMaxConnections,
  type ServerLimits,
} from "./limits.ts";

export { DEFAULT_LIMITS, type ServerLimits };
export { upgradeWebSocket } from "./upgrade.ts";

/** Where the server reports trouble. */
export type ServerLog = (
  level: "warn" | "error",
  message: string,
  data?: Record<string, unknown>,
) => void;

/** Options of `listen`. */
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
}

/** A request handler. */
export type ServeHandler = (
  req: Request,
  info: Deno.ServeHandlerInfo<Deno.NetAddr>,
) => Promise<Response>;

type ServeOn = (
  conn: Deno.Conn,
  signal: AbortSignal,
  handler: ServeHandler,
  onError: (err: unknown) => Response,
  onListen: () => void,
) => ConnServer;

/** Deno's per-connection HTTP serving, when this Deno has it. */
function serveOnConnection(): ServeOn | undefined {
  const d = Deno as unknown as Record<symbol | string, unknown>;
  const internal = d[d.internal as symbol] as
    | Record<string, unknown>
    | undefined;
  const fn = internal?.serveHttpOnConnection;
  return typeof fn === "function" ? fn as ServeOn : undefined;
}

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

function plain500(): Response {
  return new Response(
    '{"status":500,"data":null,"error":"Internal Server Error"}',
    { status: 500, headers: { "content-type": "application/json" } },
  );
}

/** A server with timeouts and a connection cap (a `Deno.HttpServer`). */
export class Server implements Deno.HttpServer<Deno.NetAddr> {
  readonly addr: Deno.NetAddr;
  readonly finished: Promise<void>;
  /** The body reads this server's sweeper expires. */
  readonly bodies: BodyDeadlines;
  readonly #listener: Deno.TcpListener;
  readonly #table: ConnectionTable;
  readonly #limits: ServerLimits;
  readonly #handler: ServeHandler;
  readonly #serveOn: ServeOn;
  readonly #log: ServerLog;
  readonly #webSockets: boolean;
  #stopping = false;
  #refed = true;
  #done!: () => void;

  constructor(
    listener: Deno.TcpListener,
    serveOn: ServeOn,
    handler: ServeHandler,
    limits: ServerLimits,
    log: ServerLog,
    bodies: BodyDeadlines = new BodyDeadlines({
      idleMs: limits.bodyTimeoutMs,
      totalMs: limits.bodyDeadlineMs,
      minRate: limits.bodyMinRate,
    }),
    webSockets = false,
  ) {
    this.#listener = listener;
    this.bodies = bodies;
    this.addr = listener.addr;
    this.#serveOn = serveOn;
    this.#handler = handler;
    this.#limits = limits;
    this.#log = log;
    this.#webSockets = webSockets && canHoldSockets();
    this.#table = new ConnectionTable(limits, bodies);
    register(this.#table.conns);
    this.finished = new Promise((r) => this.#done = r);
    this.#table.start();
    this.#run();
  }

  /** Runs the accept loop; should it ever throw, logs and starts it again. */
  #run(): void {
    this.#acceptLoop().then(() => this.#settle(), (err) => {
      this.#log("error", "Cannot accept connections: restarting", {
        error: err instanceof Error ? err.stack ?? err.message : String(err),
      });
      if (this.#stopping) this.#settle();
      else setTimeout(() => this.#run(), 100);
    });
  }

  /** Connections open now. */
  get connections(): number {
    return this.#table.conns.size;
  }

  async #acceptLoop(): Promise<void> {
    const table = this.#table;
    let failures = 0;
    while (!this.#stopping) {
      if (table.conns.size >= this.#limits.maxConnections) {
        // At the cap: close an idle connection, or wait until one closes.
        table.evict();
        await table.slot(table.period);
        continue;
      }
      let conn: Deno.TcpConn;
      try {
        conn = await this.#listener.accept();
      } catch (err) {
        if (this.#stopping) break;
        if (
          err instanceof Deno.errors.BadResource ||
          err instanceof Deno.errors.Interrupted
        ) break;
        // EMFILE/ENFILE and the like: free a descriptor, back off, retry.
        if (failures++ === 0) {
          this.#log("warn", "Cannot accept connection: retrying", {
            error: err instanceof Error ? err.message : String(err),
            connections: table.conns.size,
          });
        }
        table.evict();
        await delay(100);
        continue;
      }
      if (failures > 0) {
        this.#log("warn", "Accepting connections again", { failures });
        failures = 0;
      }
      this.#serve(conn);
    }
  }

  #serve(conn: Deno.TcpConn): void {
    const table = this.#table;
    const c = new UpgradableConnection(performance.now());
    if (this.#webSockets) c.hold(conn); // before Deno's server takes conn
    const handler = this.#handler;
    const done = (res: Response): Response | Promise<Response> => {
      c.inFlight--;
      c.last = performance.now();
      c.res = res;
      // 408/413 leave a body unread: close the connection once it is out.
      c.closeSoon = res.status === 408 || res.status === 413;
      // Upgraded: the 101 went out on the duplicate; handing it to Deno's
      // server only once that server is gone keeps it from writing it.
      if (c.socket) {
        // The handler answered something else than the upgrade's 101.
        if (res.status !== 101) c.cancelUpgrade?.();
        return c.served!.then(() => res);
      }
      return res;
    };
    const fail = (err: unknown): Promise<never> => {
      c.inFlight--;
      c.last = performance.now();
      if (c.socket) {
        // It upgraded, then failed: no 101, and no error answer either.
        c.cancelUpgrade?.();
        return c.served!.then(() => Promise.reject(err));
      }
      throw err;
    };
    const onRequest: ServeHandler = (req, info) => {
      c.inFlight++;
      c.requests++;
      c.info = info;
      c.req = req;
      try {
        return handler(req, info).then(done, fail);
      } catch (err) {
        return fail(err); // a handler that throws before returning a promise
      }
    };
    try {
      const signal = c.closer as unknown as AbortSignal;
      c.http = this.#serveOn(conn, signal, onRequest, (err) => {
        this.#log("error", "Cannot handle request", {
          error: err instanceof Error ? err.stack ?? err.message : String(err),
        });
        return plain500();
      }, () => {});
    } catch {
      c.release();
      try {
        conn.close();
      } catch { /* gone */ }
      return;
    }
    table.add(c);
    if (!this.#refed) c.http.unref();
    let removed = false;
    const remove = () => {
      if (removed) return;
      removed = true;
      table.remove(c);
      if (this.#stopping && table.conns.size === 0) this.#settle();
    };
    // An upgraded connection stays (under the cap) until its socket closes.
    c.onSocketGone = remove;
    // A client resetting its connection is normal: never an error here.
    const gone = () => {
      if (c.socket) return;
      c.release();
      remove();
    };
    c.served = c.http.finished.then(gone, gone);
  }

  /**
   * Closes the WebSockets upgraded on this server (Going Away); `now`: cut
   * off at once, without waiting for the clients' close frames.
   */
  #closeSockets(now = false): void {
    for (const c of [...this.#table.conns]) {
      const ws = (c as UpgradableConnection).socket;
      if (!ws || ws.readyState === WebSocket.CLOSED) continue;
      if (ws.readyState === WebSocket.OPEN) {
        try {
          ws.close(1001, "Server shutting down");
        } catch { /* closing */ }
      }
      if (now) {
        terminate(ws);
        (c as UpgradableConnection).onSocketGone?.();
      }
    }
  }

  #settle(): void {
    if (!this.#stopping || this.#table.conns.size > 0) return;
    this.#table.stop();
    forget(this.#table.conns);
    this.#done();
  }

  #stopAccepting(): void {
    if (this.#stopping) return;
    this.#stopping = true;
    try {
      this.#listener.close();
    } catch { /* closed */ }
  }

  /**
   * Graceful: stops accepting, closes idle connections at once and the
   * others once their response is sent; resolves when all are closed.
   */
  shutdown(): Promise<void> {
    this.#stopAccepting();
    this.#table.drain();
    this.#closeSockets();
    this.#settle();
    return this.finished;
  }

  /** Stops accepting and closes every connection now. */
  close(): Promise<void> {
    this.#stopAccepting();
    this.#table.closeAll();
    this.#closeSockets(true);
    this.#settle();
    return this.finished;
  }

  ref(): void {
    this.#refed = true;
    this.#listener.ref();
    for (const c of this.#table.conns) c.http?.ref();
  }

  unref(): void {
    this.#refed = false;
    this.#listener.unref();
    for (const c of this.#table.conns) c.http?.unref();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.shutdown();
  }
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
  if (webSockets) {
    // Two descriptors a connection: the open-file limit holds half as many.
    const fds = defaultMaxConnections();
    if (fds < DEFAULT_LIMITS.maxConnections) {
      limits.maxConnections = Math.min(
        limits.maxConnections,
        Math.max(16, Math.floor(fds / 2)),
      );
    }
  }
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
  );
  const signal = options.signal;
  if (signal) {
    if (signal.aborted) server.close();
    else signal.addEventListener("abort", () => server.close(), { once: true });
  }
  options.onListen?.(server.addr);
  return server;
}
