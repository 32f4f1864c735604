/**
 * Raw TCP helpers for the connection tests: what a slow, idle or hostile
 * client does, byte by byte.
 *
 * @module
 */

import type { TestServer } from "./_server.ts";
import { pause } from "./_wait.ts";

export const enc: TextEncoder = new TextEncoder();
export const dec: TextDecoder = new TextDecoder();

/** Resolves after `ms` (kept for the realtime files; new code uses _wait.ts). */
export const sleep: (ms: number) => Promise<void> = pause;

/** The port a test server listens on. */
export function portOf(s: TestServer): number {
  return Number(new URL(s.url).port);
}

/** A raw TCP connection to the loopback port. */
export async function connect(port: number): Promise<Deno.TcpConn> {
  return await Deno.connect({ hostname: "127.0.0.1", port });
}

/** Closes connections, ignoring those already closed. */
export function closeAll(conns: Deno.Conn[]): void {
  for (const c of conns) {
    try {
      c.close();
    } catch { /* closed */ }
  }
}

/** Health answers 200 within `ms` (polled with short-lived requests). */
export async function healthWithin(port: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/health`, {
        signal: AbortSignal.timeout(1000),
        headers: { connection: "close" },
      });
      await res.body?.cancel();
      if (res.status === 200) return true;
    } catch { /* not yet */ }
    await pause(100);
  }
  return false;
}

/**
 * Reads one response head and its Content-Length body; returns what arrived
 * when the connection closes first or `ms` pass (then it is closed).
 */
export async function readResponse(
  conn: Deno.Conn,
  ms = 10_000,
): Promise<string> {
  let text = "";
  const buf = new Uint8Array(16 * 1024);
  const timer = setTimeout(() => closeAll([conn]), ms);
  try {
    while (true) {
      const head = text.indexOf("\r\n\r\n");
      if (head >= 0) {
        const len = /content-length: *(\d+)/i.exec(text.slice(0, head));
        if (len && text.length >= head + 4 + Number(len[1])) return text;
      }
      const n = await conn.read(buf);
      if (n === null) return text;
      text += dec.decode(buf.subarray(0, n));
    }
  } catch {
    return text;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Reads until the server closes the connection (EOF or reset) or `ms`
 * pass; returns what arrived and whether the server closed it.
 */
export async function readUntilClosed(
  conn: Deno.Conn,
  ms: number,
): Promise<{ closed: boolean; text: string }> {
  let text = "";
  let closed = false;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    closeAll([conn]);
  }, ms);
  const buf = new Uint8Array(16 * 1024);
  try {
    while (true) {
      const n = await conn.read(buf);
      if (n === null) break;
      text += dec.decode(buf.subarray(0, n));
    }
    closed = !timedOut;
  } catch {
    closed = !timedOut; // a reset by the server also closes it
  } finally {
    clearTimeout(timer);
  }
  if (closed) closeAll([conn]);
  return { closed, text };
}
