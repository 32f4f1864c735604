/**
 * The realtime test client, in one place: an SSE client that parses
 * `GET /api/v1/realtime` into messages and a WebSocket client for
 * `/api/v1/realtime/ws` that queues the server's JSON messages. Both give the
 * next message with a deadline (`next(ms)`, 10 s by default: undefined past
 * it or at the end), what arrives within a window (`drain(ms)`, for "nothing more came") and
 * `close()`. Attacks that need raw bytes use tests/_raw_ws.ts instead.
 *
 * @module
 */

import type { TestServer } from "./_server.ts";
import { pause } from "./_wait.ts";

/** One SSE message. */
export interface SseMessage {
  id?: string;
  event: string;
  // deno-lint-ignore no-explicit-any
  data: any;
}

/** An open SSE stream. */
export interface SseClient {
  status: number;
  headers: Headers;
  /** The error envelope when the server refused (status ≠ 200). */
  // deno-lint-ignore no-explicit-any
  body?: any;
  /** The next message (not heartbeats), or undefined after `ms` or at the end. */
  next(ms?: number): Promise<SseMessage | undefined>;
  /** Messages arriving within `ms` (after the ones already queued). */
  drain(ms?: number): Promise<SseMessage[]>;
  /** Comments seen (heartbeats). */
  comments: number;
  /** Resolves when the server ended the stream. */
  ended: Promise<void>;
  close(): void;
}

/** Opens `GET /api/v1/realtime` with the given query and headers. */
export async function openSse(
  s: Pick<TestServer, "url">,
  query: string,
  opts: { token?: string; headers?: Record<string, string> } = {},
): Promise<SseClient> {
  const ac = new AbortController();
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  const res = await fetch(`${s.url}/api/v1/realtime?${query}`, {
    headers,
    signal: ac.signal,
  });
  if (res.status !== 200) {
    const text = await res.text();
    let body;
    try {
      body = JSON.parse(text);
    } catch { /* not JSON */ }
    return {
      status: res.status,
      headers: res.headers,
      body,
      next: () => Promise.resolve(undefined),
      drain: () => Promise.resolve([]),
      comments: 0,
      ended: Promise.resolve(),
      close: () => {},
    };
  }
  const queue: SseMessage[] = [];
  let wake: (() => void) | undefined;
  let done = false;
  let endedResolve!: () => void;
  const ended = new Promise<void>((r) => endedResolve = r);
  const client: SseClient = {
    status: res.status,
    headers: res.headers,
    comments: 0,
    ended,
    async next(ms = 10_000) {
      const deadline = Date.now() + ms;
      while (queue.length === 0 && !done && Date.now() < deadline) {
        await new Promise<void>((r) => {
          // The timer goes with the wait: none is left when a message wakes it.
          const timer = setTimeout(r, Math.max(1, deadline - Date.now()));
          wake = () => {
            clearTimeout(timer);
            r();
          };
        });
      }
      return queue.shift();
    },
    async drain(ms = 300) {
      await pause(ms);
      return queue.splice(0);
    },
    close() {
      ac.abort();
    },
  };
  (async () => {
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    try {
      for (;;) {
        const { value, done: end } = await reader.read();
        if (end) break;
        buf += value;
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const msg: SseMessage = { event: "message", data: undefined };
          let data: string | undefined, comment = false, retry = false;
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) comment = true;
            else if (line.startsWith("id: ")) msg.id = line.slice(4);
            else if (line.startsWith("event: ")) msg.event = line.slice(7);
            else if (line.startsWith("data: ")) data = line.slice(6);
            else if (line.startsWith("retry: ")) retry = true;
          }
          if (comment) {
            client.comments++;
            continue;
          }
          if (retry && data === undefined) continue;
          msg.data = data === undefined ? undefined : JSON.parse(data);
          queue.push(msg);
          wake?.();
        }
      }
    } catch { /* aborted */ }
    done = true;
    wake?.();
    endedResolve();
  })();
  return client;
}

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
export function openWs(s: Pick<TestServer, "url">, query = ""): WsClient {
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
  const next = async (ms = 10_000) => {
    const deadline = Date.now() + ms;
    while (queue.length === 0 && !done && Date.now() < deadline) {
      await new Promise<void>((r) => {
        // The timer goes with the wait: none is left when a message wakes it.
        const timer = setTimeout(r, Math.max(1, deadline - Date.now()));
        wake = () => {
          clearTimeout(timer);
          r();
        };
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
    async nextOf(type, ms = 10_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const m = await next(Math.max(1, deadline - Date.now()));
        if (!m || m.type === type) return m;
      }
    },
    async drain(ms = 300) {
      await pause(ms);
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
  s: Pick<TestServer, "url">,
  query = "",
): Promise<WsClient> {
  const c = openWs(s, query);
  if (!(await c.opened)) {
    throw new Error(`the WebSocket did not open (${query})`);
  }
  return c;
}

/** The token ids (`jti`) of the server's open realtime streams ("" for a guest's). */
export function streamJtis(s: TestServer): string[] {
  return [...s.app.realtime?.hub.subscribers ?? []].map((sub) =>
    sub.claims?.jti ?? ""
  );
}

/** A token's id (`jti` claim). */
export function jtiOf(token: string): string {
  const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
  return (JSON.parse(atob(part)) as { jti: string }).jti;
}
