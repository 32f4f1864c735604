/**
 * Realtime test helpers: an SSE client that parses the stream into
 * messages, with timeouts, and a WebSocket client that queues messages.
 *
 * @module
 */

import type { TestServer } from "./_server.ts";

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
  s: TestServer,
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
    async next(ms = 3000) {
      const deadline = Date.now() + ms;
      while (queue.length === 0 && !done && Date.now() < deadline) {
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, Math.max(1, deadline - Date.now()));
        });
      }
      return queue.shift();
    },
    async drain(ms = 300) {
      await new Promise((r) => setTimeout(r, ms));
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

/** Waits until `pred` holds (polling), or fails after `ms`. */
export async function until(
  pred: () => boolean | Promise<boolean>,
  ms = 3000,
  what = "condition",
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
