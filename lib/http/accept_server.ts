/**
 * The accept loop and the connections of the HTTP server (`Server`): its
 * own loop over a `Deno.TcpListener`, each connection served by Deno's
 * per-connection HTTP engine, under the timeouts and the cap of
 * `ConnectionTable`. `listen()` (server.ts) opens the listener and builds it.
 *
 * @module
 */

import {
  ConnectionTable,
  type ConnServer,
  type SharedCount,
} from "./connections.ts";
import {
  canHoldSockets,
  forget,
  register,
  terminate,
  UpgradableConnection,
} from "./upgrade.ts";
import { BodyDeadlines } from "./deadlines.ts";
import type { ServerLimits } from "./limits.ts";

/** Where the server reports trouble. */
export type ServerLog = (
  level: "warn" | "error",
  message: string,
  data?: Record<string, unknown>,
) => void;

/** A request handler. */
export type ServeHandler = (
  req: Request,
  info: Deno.ServeHandlerInfo<Deno.NetAddr>,
) => Promise<Response>;

/** Deno's serving of one connection (an internal of Deno). */
export type ServeOn = (
  conn: Deno.Conn,
  signal: AbortSignal,
  handler: ServeHandler,
  onError: (err: unknown) => Response,
  onListen: () => void,
) => ConnServer;

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
    shared?: SharedCount,
  ) {
    this.#listener = listener;
    this.bodies = bodies;
    this.addr = listener.addr;
    this.#serveOn = serveOn;
    this.#handler = handler;
    this.#limits = limits;
    this.#log = log;
    this.#webSockets = webSockets && canHoldSockets();
    this.#table = new ConnectionTable(limits, bodies, shared);
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
      if (table.full(this.#limits.maxConnections)) {
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
      // Deno could not take the connection (the client already reset it):
      // dropped, as a reset connection is, without a line.
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
    // A connection that failed (the client went away mid-response: a broken
    // pipe) rejects `finished` without closing Deno's server on it, whose
    // "http" resource would stay in the resource table for good: it is
    // closed here (the error is the client's, as above), and the connection
    // leaves the table once it is. Not while upgrading: the shutdown waits
    // for the upgrade's response, which waits for `served`.
    const failed = (): void | Promise<void> => {
      // A shutdown that fails has nothing more to release.
      const closing = c.http!.shutdown().catch(() => {});
      if (c.socket) return gone();
      return closing.then(gone);
    };
    c.served = c.http.finished.then(gone, failed);
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
