/**
 * A WebSocket client for the realtime tests: queues the server's JSON
 * messages, sends JSON (or raw text), and reports how the socket closed.
 *
 * @module
 */

import type { TestServer } from "./_server.ts";

/** One server message (`ready`, `event` or `error`). */
// deno-lint-ignore no-explicit-any
export type WsMessage = { type: string; [k: string]: any };

/** How the socket closed. */
export interface WsClose {
  code: number;
  reason: string;
}

/** An open (or refused) realtime WebSocket. */
export interface WsClient {
  socket: WebSocket;
  /** True once open; false when the connection failed before opening. */
  opened: Promise<boolean>;
  /** Sends a value as JSON, or a string as it is. */
  send(msg: unknown): void;
  /** The next message, or undefined after `ms` or once closed. */
  next(ms?: number): Promise<WsMessage | undefined>;
  /** The next message of a type (others before it are dropped). */
  nextOf(type: string, ms?: number): Promise<WsMessage | undefined>;
  /** Messages arriving within `ms` (after the ones already queued). */
  drain(ms?: number): Promise<WsMessage[]>;
  /** Resolves when the socket closed. */
  closed: Promise<WsClose>;
  /** True once closed. */
  isClosed(): boolean;
  close(): void;
}

/** Opens `ws://…/api/v1/realtime/ws?<query>`. */
export function openWs(s: TestServer, query = ""): WsClient {
  const url = `${s.url.replace(/^http/, "ws")}/api/v1/realtime/ws${
    query ? `?${query}` : ""
  }`;
  const socket = new WebSocket(url);
  const queue: WsMessage[] = [];
  let wake: (() => void) | undefined;
  let done = false;
  let openedResolve!: (v: boolean) => void;
  const opened = new Promise<boolean>((r) => openedResolve = r);
  let closedResolve!: (v: WsClose) => void;
  const closed = new Promise<WsClose>((r) => closedResolve = r);
  socket.onopen = () => openedResolve(true);
  socket.onerror = () => openedResolve(false);
  socket.onmessage = (e) => {
    let m: WsMessage;
    try {
      m = JSON.parse(String(e.data));
    } catch {
      m = { type: "unparsable", text: String(e.data) };
    }
    queue.push(m);
    wake?.();
  };
  socket.onclose = (e) => {
    done = true;
    openedResolve(false);
    closedResolve({ code: e.code, reason: e.reason });
    wake?.();
  };
  const next = async (ms = 3000) => {
    const deadline = Date.now() + ms;
    while (queue.length === 0 && !done && Date.now() < deadline) {
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, Math.max(1, deadline - Date.now()));
      });
    }
    return queue.shift();
  };
  return {
    socket,
    opened,
    send(msg) {
      socket.send(typeof msg === "string" ? msg : JSON.stringify(msg));
    },
    next,
    async nextOf(type, ms = 3000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const m = await next(Math.max(1, deadline - Date.now()));
        if (!m || m.type === type) return m;
      }
    },
    async drain(ms = 300) {
      await new Promise((r) => setTimeout(r, ms));
      return queue.splice(0);
    },
    closed,
    isClosed: () => done,
    close() {
      try {
        socket.close();
      } catch { /* closed */ }
    },
  };
}

/** Opens a socket that must open (throws otherwise). */
export async function connectWs(
  s: TestServer,
  query = "",
): Promise<WsClient> {
  const c = openWs(s, query);
  if (!(await c.opened)) {
    throw new Error(`the WebSocket did not open (${query})`);
  }
  return c;
}
