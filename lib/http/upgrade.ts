/**
 * WebSocket upgrades on the hardened server (server.ts). Deno's
 * per-connection HTTP serving tears an upgraded socket down as soon as its
 * HTTP loop ends (`op_http_close` force-closes every WebSocket it
 * upgraded), so the upgrade is done beside it instead:
 *
 * - at accept, a node `TCPWrap` takes a duplicate of the connection's
 *   descriptor (`openFromRid`: one `dup`, no reads, nothing per request);
 * - `upgradeWebSocket(req)` builds the 101 with Deno's own
 *   `Deno.upgradeWebSocket(plainRequest, { socket })` (the node:http path),
 *   whose first write first closes Deno's HTTP server on that connection;
 *   once it is gone (its descriptor closed, the duplicate keeps the TCP
 *   connection open, nothing written) the 101 goes out on the duplicate,
 *   a node `net.Socket` that Moonbase frames the WebSocket on
 *   (websocket.ts: messages limited from the frame header; Deno's own
 *   WebSocket object is never opened). Deno's server never reads the
 *   client's first frames: a client sends none before the 101.
 *
 * Ordinary connections close the duplicate when Deno's server is done.
 *
 * @module
 */

import process from "node:process";
import net from "node:net";
import { Connection } from "./connections.ts";
import { FramedWebSocket, type ServerSocket } from "./websocket.ts";

/** The node TCP handle (internal binding) this module uses. */
interface TcpHandle {
  openFromRid(rid: number): number;
  takeStream(): number;
  close(cb?: () => void): void;
}

type TcpBinding = {
  TCP: new (type: number) => TcpHandle;
  constants: { SOCKET: number };
};

let binding: TcpBinding | null | undefined;

/** node's TCP binding, when this Deno has one that can adopt a Deno conn. */
function tcpBinding(): TcpBinding | undefined {
  if (binding !== undefined) return binding ?? undefined;
  binding = null;
  try {
    const b = (process as unknown as { binding(n: string): TcpBinding })
      .binding("tcp_wrap");
    const proto = b?.TCP?.prototype as unknown as Record<string, unknown>;
    if (
      typeof proto?.openFromRid === "function" &&
      typeof proto?.takeStream === "function"
    ) binding = b;
  } catch { /* none */ }
  return binding ?? undefined;
}

/** True when this Deno can upgrade WebSockets on the hardened server. */
export function canHoldSockets(): boolean {
  return tcpBinding() !== undefined;
}

function ridOf(conn: Deno.Conn): number | undefined {
  const d = Deno as unknown as Record<symbol | string, unknown>;
  const core = (d[d.internal as symbol] as Record<string, unknown> | undefined)
    ?.core as { internalRidSymbol?: symbol } | undefined;
  const sym = core?.internalRidSymbol;
  return sym ? (conn as unknown as Record<symbol, number>)[sym] : undefined;
}

/** A connection of the hardened server that can be upgraded. */
export class UpgradableConnection extends Connection {
  /** A duplicate of the connection's socket (none: cannot upgrade). */
  handle: TcpHandle | undefined;
  /** The request being served last (the one an upgrade is for). */
  req: Request | undefined;
  /** Set once upgraded: the WebSocket now on this connection. */
  socket: ServerSocket | undefined;
  /** Resolves once Deno's HTTP server on it is done (set by the server). */
  served: Promise<void> | undefined;
  /** Called once the WebSocket (or the failed upgrade) is gone. */
  onSocketGone: (() => void) | undefined;
  /** The handler did not answer with the upgrade: the 101 is never sent. */
  cancelUpgrade: (() => void) | undefined;

  /** Takes a duplicate of `conn`'s socket, before it is served. */
  hold(conn: Deno.Conn): void {
    const b = tcpBinding();
    const rid = ridOf(conn);
    if (!b || rid === undefined) return;
    const h = new b.TCP(b.constants.SOCKET);
    if (h.openFromRid(rid) === 0) this.handle = h;
    else h.close(); // out of descriptors: served without upgrades
  }

  /** Closes the duplicate (Deno's server is done, no upgrade). */
  release(): void {
    const h = this.handle;
    this.handle = undefined;
    try {
      h?.close();
    } catch { /* closed */ }
  }
}

/** The connections `upgradeWebSocket` looks requests up in. */
const tables = new Set<Set<Connection>>();

/** Makes a server's connections upgradable (until `forget`). */
export function register(conns: Set<Connection>): void {
  tables.add(conns);
}

/** Forgets a server's connections. */
export function forget(conns: Set<Connection>): void {
  tables.delete(conns);
}

/** The hardened connection serving `req` (scans: upgrades are rare). */
function connectionOf(req: Request): UpgradableConnection | undefined {
  for (const conns of tables) {
    for (const c of conns) {
      if (c instanceof UpgradableConnection && c.req === req) return c;
    }
  }
  return undefined;
}

/** Options of `upgradeWebSocket`. */
export interface UpgradeOptions {
  /** Seconds of client silence before a ping, and after it before a close (default 30). */
  idleTimeout?: number;
  /** The subprotocol to answer with (one the client offered). */
  protocol?: string;
  /**
   * Longest message a client may send, in bytes (default 1 MiB): a frame
   * that would pass it closes the connection with 1009 from its header.
   */
  maxMessageBytes?: number;
}

/** A WebSocket upgrade: the 101 to return, and the socket. */
export interface SocketUpgrade {
  response: Response;
  socket: ServerSocket;
}

/** Default `maxMessageBytes`. */
export const MAX_MESSAGE_BYTES = 1024 * 1024;

/**
 * `Deno.upgradeWebSocket` that also works on the hardened server, where
 * Moonbase frames the WebSocket itself (websocket.ts: messages limited
 * from the frame header). Validates the request as Deno does and throws
 * the same errors, before anything is written. On `Deno.serve` it is
 * `Deno.upgradeWebSocket` (Deno frames, up to 64 MiB a message).
 */
export function upgradeWebSocket(
  req: Request,
  options: UpgradeOptions = {},
): SocketUpgrade {
  const denoOptions = {
    ...(options.idleTimeout !== undefined &&
      { idleTimeout: options.idleTimeout }),
    ...(options.protocol !== undefined && { protocol: options.protocol }),
  };
  const c = connectionOf(req);
  if (!c) return Deno.upgradeWebSocket(req, denoOptions);
  const h = c.handle;
  if (!h || c.socket || !c.served) {
    throw new TypeError("Cannot upgrade this connection to a WebSocket");
  }
  const plain = new Request(req.url, { headers: req.headers });
  const ws = new FramedWebSocket({
    maxMessageBytes: options.maxMessageBytes ?? MAX_MESSAGE_BYTES,
    idleTimeout: options.idleTimeout ?? 30,
  });
  let written = false;
  let cancelled = false;
  c.cancelUpgrade = () => {
    cancelled = true;
  };
  const fail = () => {
    c.release();
    ws.fail();
    c.onSocketGone?.();
  };
  // What Deno's node:http upgrade path uses of a net.Socket: it validates
  // the request and builds the 101, then writes it. The 101 goes out on
  // the duplicate, which becomes the framed socket; Deno's own WebSocket
  // object is told the write failed and is never used.
  const shim = {
    destroyed: false,
    _handle: {
      readStop: () => 0,
      takeStream: () => {
        throw new TypeError("Cannot take the stream: Moonbase frames it");
      },
    },
    write(head: string, cb: (err?: Error | null) => void): boolean {
      if (written) throw new TypeError("Already upgraded");
      written = true;
      c.closer.close(); // Deno's server on it: closed, writes nothing more
      const taken = new Error("Moonbase frames this WebSocket");
      c.served!.then(() => {
        if (cancelled) {
          fail();
          cb(taken);
          return;
        }
        const s = new net.Socket(
          {
            handle: h,
            pauseOnCreate: true,
          } as unknown as net.SocketConstructorOpts,
        );
        c.handle = undefined; // the socket owns the duplicate now
        s.write(head, (err?: Error | null) => {
          if (err) {
            s.destroy();
            fail();
          } else ws.attach(s);
          cb(taken);
        });
      }, fail);
      return true;
    },
  };
  const up = Deno.upgradeWebSocket(plain, {
    ...denoOptions,
    socket: shim as unknown as Deno.UpgradeWebSocketOptions["socket"],
  });
  c.socket = ws;
  ws.addEventListener("close", () => c.onSocketGone?.());
  closeWithin(ws, CLOSE_GRACE_MS, () => c.onSocketGone?.());
  return { response: up.response, socket: ws };
}

/** How long a closing WebSocket waits for its client's close frame (ms). */
export const CLOSE_GRACE_MS = 2000;

/**
 * Ends a WebSocket at once, without waiting for its client (Deno waits
 * for the client's close frame for ever once closing): its resource is
 * closed. False when this Deno does not let us.
 */
export function terminate(ws: ServerSocket): boolean {
  if (ws instanceof FramedWebSocket) {
    ws.terminate();
    return true;
  }
  const d = Deno as unknown as Record<symbol | string, unknown>;
  const core = (d[d.internal as symbol] as Record<string, unknown> | undefined)
    ?.core as { tryClose?: (rid: number) => void } | undefined;
  const sym = Object.getOwnPropertySymbols(ws).find((k) =>
    k.description === "[[rid]]"
  );
  const rid = sym && (ws as unknown as Record<symbol, unknown>)[sym];
  if (typeof rid !== "number" || typeof core?.tryClose !== "function") {
    return false;
  }
  try {
    core.tryClose(rid);
  } catch { /* closed */ }
  return true;
}

/**
 * After `close()`, a client that never answers the close is cut off after
 * `ms` (and `gone` runs), so it cannot hold a descriptor and a connection
 * slot, or a server's stop, for ever.
 */
function closeWithin(
  ws: ServerSocket,
  ms: number,
  gone: () => void,
): void {
  const close = ws.close.bind(ws);
  ws.close = (code?: number, reason?: string) => {
    close(code, reason);
    if (ws.readyState === WebSocket.CLOSED) return;
    const t = setTimeout(() => {
      if (ws.readyState === WebSocket.CLOSED) return;
      terminate(ws);
      gone();
    }, ms);
    Deno.unrefTimer(t);
    // Closed in time: no timer is left running.
    ws.addEventListener("close", () => clearTimeout(t), { once: true });
  };
}
