/**
 * Helpers of the realtime SSE suites (`tests/realtime_*_test.ts`): rule
 * shorthands, streams that must open (their `ready` checked) or must be
 * refused, a raw reader of the wire text, record writes through the API,
 * and marks — a record written to a public entity every stream also
 * follows, whose event proves that every event written before it has
 * arrived (events reach a stream in id order), so "no event" is checked
 * without sleeping.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  type TestServer,
} from "./_server.ts";
import {
  openSse,
  type SseClient,
  type SseMessage,
} from "./_realtime_client.ts";
import { makeEntity } from "./_extend_fixtures.ts";

/** A rule of a mode. */
export const PUBLIC = { mode: "public", expr: "" };
export const AUTH = { mode: "auth", expr: "" };
/** Admin-only (the empty mode). */
export const ADMIN = { mode: "", expr: "" };

/** A custom rule. */
export function custom(expr: string): { mode: string; expr: string } {
  return { mode: "custom", expr };
}

/** The entity marks are written to (public rules). */
export const MARKS = "rt_marks";

/** Creates the marks entity (once per server). */
export async function setupMarks(s: TestServer): Promise<void> {
  await makeEntity(s, {
    name: MARKS,
    fields: [{ name: "tag", type: "string" }],
  });
}

/**
 * Opens a guest stream on the marks that stays open while a suite runs.
 *
 * Why: the feed runs only while the instance has a subscriber, and once
 * had a bug restarting after the last one left (fixed; `realtime_sse_test.ts`
 * has a case of its own for it). Each suite keeps this stream open so its
 * cases test what they are about, not the feed's start and stop.
 */
export async function keepFeedRunning(s: TestServer): Promise<SseClient> {
  const c = await openSse(s, topicsQuery([MARKS]));
  assert(c.status === 200, `keeper stream: ${c.status}`);
  return c;
}

/** The `topics=` query of a list. */
export function topicsQuery(topics: readonly string[]): string {
  return `topics=${topics.map(encodeURIComponent).join(",")}`;
}

/** Options of a stream. */
export interface StreamOptions {
  token?: string;
  headers?: Record<string, string>;
  /** More query parameters (`lastEventId=…`, `token=…`). */
  query?: string;
}

async function open(
  s: TestServer,
  topics: readonly string[],
  o: StreamOptions,
): Promise<SseClient> {
  const q = topicsQuery(topics) + (o.query ? `&${o.query}` : "");
  return await openSse(s, q, { token: o.token, headers: o.headers });
}

/**
 * Opens a stream on `topics` (the marks topic added) that must be accepted,
 * and checks its first message is `ready` naming the topics.
 */
export async function subscribe(
  s: TestServer,
  topics: readonly string[],
  o: StreamOptions = {},
): Promise<SseClient> {
  const all = [...topics, MARKS];
  const c = await open(s, all, o);
  assert(
    c.status === 200,
    `stream ${all}: expected 200, got ${c.status}: ${JSON.stringify(c.body)}`,
  );
  assertEquals(await c.next(), { event: "ready", data: { topics: all } });
  return c;
}

/** Opens a stream that must be refused; returns its status and error. */
export async function refusal(
  s: TestServer,
  query: string,
  o: { token?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; error: string }> {
  const c = await openSse(s, query, o);
  if (c.status === 200) {
    c.close();
    throw new Error(`stream ${query}: expected a refusal, got 200`);
  }
  assert(
    c.body && c.body.status === c.status && typeof c.body.error === "string",
    `stream ${query}: an error envelope (${JSON.stringify(c.body)})`,
  );
  return { status: c.status, error: c.body.error };
}

/**
 * Writes a mark and returns, per stream, the messages that arrived before
 * it (other marks left out). Fails when a stream does not get it in `ms`.
 */
export async function upToMark(
  s: TestServer,
  clients: readonly SseClient[],
  ms = 5000,
): Promise<SseMessage[][]> {
  const tag = crypto.randomUUID();
  const r = await s.request("POST", `/api/v1/entities/${MARKS}`, {
    body: { tag },
  });
  assertStatus(r, 201, "write a mark");
  const out: SseMessage[][] = [];
  for (const c of clients) {
    const got: SseMessage[] = [];
    const deadline = Date.now() + ms;
    for (;;) {
      const m = await c.next(Math.max(1, deadline - Date.now()));
      if (!m) {
        throw new Error(
          `the mark never arrived; got ${JSON.stringify(got).slice(0, 800)}`,
        );
      }
      if (m.data?.entity === MARKS) {
        if (m.data.record?.tag === tag) break;
        continue;
      }
      got.push(m);
    }
    out.push(got);
  }
  return out;
}

/**
 * Waits until the instance delivered every event written so far (a mark
 * reaches a fresh stream). On PostgreSQL the feed learns of a commit by
 * NOTIFY, a moment after the write answered: a stream opened in between
 * starts before that event and gets it. Cases that open a stream after
 * writes it must not see call this first.
 */
export async function caughtUp(s: TestServer): Promise<void> {
  const c = await openSse(s, topicsQuery([MARKS]));
  assert(c.status === 200, `caughtUp stream: ${c.status}`);
  try {
    await c.next(); // ready
    await upToMark(s, [c]);
  } finally {
    c.close();
  }
}

/** What `upToMark` returns for one stream. */
export async function before(
  s: TestServer,
  c: SseClient,
): Promise<SseMessage[]> {
  return (await upToMark(s, [c]))[0];
}

/** `[event, record id]` of each message. */
export function brief(msgs: readonly SseMessage[]): [string, string][] {
  return msgs.map((m) => [m.event, m.data?.id]);
}

/** The next message, which must come within `ms`. */
export async function nextMessage(
  c: SseClient,
  what: string,
  ms = 4000,
): Promise<SseMessage> {
  const m = await c.next(ms);
  assert(m, `no message: ${what}`);
  return m;
}

/** A stream read as raw text (the wire format itself). */
export interface RawStream {
  status: number;
  /** Everything received so far. */
  text(): string;
  /** Waits until the text contains `needle` (or fails after `ms`). */
  waitFor(needle: string, ms?: number): Promise<string>;
  close(): void;
}

/** Opens a stream and keeps its raw text. */
export async function rawStream(
  s: TestServer,
  query: string,
  token?: string,
): Promise<RawStream> {
  const ac = new AbortController();
  const res = await fetch(`${s.url}/api/v1/realtime?${query}`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
    signal: ac.signal,
  });
  let buf = "";
  if (res.body) {
    (async () => {
      const reader = res.body!.pipeThrough(new TextDecoderStream())
        .getReader();
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
        }
      } catch { /* aborted */ }
    })();
  }
  return {
    status: res.status,
    text: () => buf,
    async waitFor(needle, ms = 4000) {
      const deadline = Date.now() + ms;
      while (!buf.includes(needle)) {
        if (Date.now() > deadline) {
          throw new Error(
            `raw stream: no ${JSON.stringify(needle)} in ${buf.slice(0, 800)}`,
          );
        }
        await new Promise((r) => setTimeout(r, 15));
      }
      return buf;
    },
    close: () => ac.abort(),
  };
}

/** A record written through the API (its JSON data; fails on another status). */
export async function write(
  s: TestServer,
  method: "POST" | "PATCH" | "DELETE",
  path: string,
  body?: unknown,
  token?: string,
): Promise<Record<string, unknown> & { id: string }> {
  const r = await s.request(method, `/api/v1/entities/${path}`, {
    body,
    token: token ?? await s.adminToken(),
  });
  const want = method === "POST" ? 201 : method === "PATCH" ? 200 : 204;
  if (method === "DELETE" && r.status === 200) return r.data;
  assertStatus(r, want, `${method} ${path}`);
  return r.data;
}

/** A record as an admin's GET returns it. */
export async function stored(
  s: TestServer,
  entity: string,
  id: string,
): Promise<Record<string, unknown>> {
  const r = await s.request("GET", `/api/v1/entities/${entity}/${id}`, {
    token: await s.adminToken(),
  });
  assertStatus(r, 200, `GET ${entity}/${id}`);
  return r.data;
}

/** Closes streams (ignores those already ended). */
export function closeAll(...clients: { close(): void }[]): void {
  for (const c of clients) c.close();
}
