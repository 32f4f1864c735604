/**
 * Fixtures of the system-log tests: reading `GET /api/v1/sys/logs` with its
 * page checks, walking the keyset cursor, writing entries straight through
 * the logger, reading the log store, and an auth entity with a user.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  type Reply,
  seedUser,
  type TestServer,
} from "./_server.ts";
import type { LogEntry } from "../lib/logs/types.ts";

export type { LogEntry };

/** The logs endpoint. */
export const LOGS = "/api/v1/sys/logs";

const PAGE_KEYS = ["cursor", "has_more", "items", "items_count", "limit"];
const ENTRY_KEYS = [
  "auth_entity",
  "auth_id",
  "data",
  "duration_ms",
  "id",
  "ip",
  "level",
  "message",
  "method",
  "path",
  "request_id",
  "status",
  "time",
  "type",
];

/** The email of the harness admin (`s.adminToken()`). */
export const ADMIN_EMAIL = "admin@example.com";
export const ROOT_EMAIL = "root@example.com";
export const ROOT_PASSWORD = "Root-Passw0rd-xyzzy-42";
export const USER_EMAIL = "alice@example.com";
export const USER_PASSWORD = "Alice-Secret-pw-9137";
export const WRONG_PASSWORD = "Wrong-Guess-pw-5521";

/** A distinct client IP per login (the limit is 5 logins/min per IP). */
let ipSeq = 0;
export function nextIp(): string {
  ipSeq++;
  return `198.51.${Math.floor(ipSeq / 250)}.${(ipSeq % 250) + 1}`;
}

/** GET /api/v1/sys/logs with query parameters. */
export function getLogs(
  s: TestServer,
  token: string | undefined,
  params: Record<string, string> = {},
): Promise<Reply> {
  const qs = new URLSearchParams(params).toString();
  return s.request("GET", `${LOGS}${qs ? "?" + qs : ""}`, { token });
}

/** Checks the page shape and returns the items. */
export function page(r: Reply, where: string): LogEntry[] {
  assertStatus(r, 200, where);
  assertEquals(r.body?.error, "", `${where}: error`);
  const d = r.data as Record<string, unknown>;
  assertEquals(Object.keys(d).sort(), PAGE_KEYS, `${where}: page keys`);
  const items = d.items as LogEntry[];
  assert(Array.isArray(items), `${where}: items is an array`);
  assertEquals(d.items_count, items.length, `${where}: items_count`);
  assert(typeof d.limit === "number", `${where}: limit is a number`);
  assert(items.length <= (d.limit as number), `${where}: items <= limit`);
  assert(typeof d.has_more === "boolean", `${where}: has_more boolean`);
  if (d.has_more) {
    assertEquals(
      d.cursor,
      items[items.length - 1].id,
      `${where}: cursor = last id`,
    );
  } else {
    assertEquals(d.cursor, null, `${where}: no cursor on the last page`);
  }
  for (const e of items) {
    assertEquals(Object.keys(e).sort(), ENTRY_KEYS, `${where}: entry keys`);
  }
  for (let i = 1; i < items.length; i++) {
    assert(items[i - 1].id > items[i].id, `${where}: newest first (by id)`);
  }
  return items;
}

/** The messages of entries, in order. */
export function messages(items: LogEntry[]): string[] {
  return items.map((e) => e.message);
}

/** Every entry matching `params`, walking all pages with `after`. */
export async function walk(
  s: TestServer,
  token: string,
  params: Record<string, string>,
  limit: number,
): Promise<{ items: LogEntry[]; pages: number }> {
  const out: LogEntry[] = [];
  let after: string | null = null;
  let pages = 0;
  for (;;) {
    const q: Record<string, string> = { ...params, limit: String(limit) };
    if (after) q.after = after;
    const r = await getLogs(s, token, q);
    const items = page(r, `walk page ${pages + 1}`);
    pages++;
    out.push(...items);
    if (!r.data.has_more) break;
    assertEquals(items.length, limit, "a page with has_more is full");
    after = r.data.cursor;
    assert(pages < 1000, "walk terminates");
  }
  return { items: out, pages };
}

/** All rows of `mb_logs` (after a flush), as stored; blocks not included. */
export async function storeRows(
  s: TestServer,
): Promise<Record<string, unknown>[]> {
  await s.app.log.flush();
  return await s.app.logs.storage.query(
    `SELECT * FROM "mb_logs" ORDER BY "id"`,
  );
}

/** The entries in the log store, rows and blocks (after a flush). */
export async function countRows(s: TestServer): Promise<number> {
  await s.app.log.flush();
  const rows = await s.app.logs.storage.query(
    `SELECT COUNT(*) AS n FROM "mb_logs"`,
  );
  return Number(rows[0].n) + (await blockSizes(s)).reduce((a, b) => a + b, 0);
}

/** The entry count of each block, oldest first (after a flush). */
export async function blockSizes(s: TestServer): Promise<number[]> {
  await s.app.log.flush();
  const rows = await s.app.logs.storage.query(
    `SELECT "n" FROM "mb_log_blocks" ORDER BY "hi"`,
  );
  return rows.map((r) => Number(r.n));
}

/**
 * Logs `n` request entries through the logger at once (one chunk: a block
 * from 64 on); entry `i` is GET/POST `${prefix}/${i % 7}`, status 200, 404
 * or 500 by `i % 3`, request id `${prefix}-${i}`, auth for even `i`.
 */
export async function burst(
  s: TestServer,
  prefix: string,
  n: number,
): Promise<void> {
  for (let i = 0; i < n; i++) {
    const status = [200, 404, 500][i % 3];
    s.app.log.request(
      status === 500 ? "error" : status === 404 ? "warn" : "info",
      i % 2 ? "POST" : "GET",
      `${prefix}/${i % 7}`,
      status,
      i + 0.25,
      i % 5 ? "203.0.113.9" : null,
      i % 2 ? null : `u${i}`,
      i % 2 ? null : "users",
      `${prefix}-${i}`,
    );
  }
  await s.app.log.flush();
}

/** A log entry without an id (the logger assigns ids in its own format). */
export type NewEntry = Omit<LogEntry, "id">;

/** An app entry at the current time, with the given fields replaced. */
export function entry(p: Partial<NewEntry>): NewEntry {
  return {
    time: new Date().toISOString(),
    level: "info",
    type: "app",
    message: "",
    method: null,
    path: null,
    status: null,
    duration_ms: null,
    ip: null,
    auth_id: null,
    auth_entity: null,
    request_id: null,
    data: null,
    ...p,
  };
}

/** Writes entries (with their own times) through the logger and the store. */
export async function put(s: TestServer, entries: NewEntry[]): Promise<void> {
  for (const e of entries) s.app.log.write(e);
  await s.app.log.flush();
}

/** The ISO time `d` days ago. */
export function daysAgo(d: number): string {
  return new Date(Date.now() - d * 86_400_000).toISOString();
}

/** Logs in on a login route from a given client IP. */
export function login(
  s: TestServer,
  path: string,
  identity: string,
  password: string,
  ip: string,
  extra: Record<string, string> = {},
): Promise<Reply> {
  return s.request("POST", path, {
    body: { identity, password },
    headers: { "x-forwarded-for": ip, ...extra },
  });
}

/** The harness admin (`s.adminToken()`) with its id. */
export async function harnessAdmin(
  s: TestServer,
): Promise<{ token: string; id: string }> {
  const token = await s.adminToken();
  const row = await s.app.schemas.get("mb_admins")!.queryFromCols(
    ADMIN_EMAIL,
    ["email"],
  );
  assert(row, "the harness admin exists");
  return { token, id: String(row.id) };
}

/**
 * An auth entity `users` (created through the API) and the user
 * `USER_EMAIL` / `USER_PASSWORD` in it (inserted directly), with a token
 * issued for that user.
 */
export async function withUser(s: TestServer): Promise<{
  admin: string;
  usersId: string;
  userId: string;
  user: string;
}> {
  const admin = await s.adminToken();
  const r = await s.request("POST", "/api/v1/schemas", {
    token: admin,
    body: { name: "users", type: "auth", fields: [] },
  });
  assertStatus(r, 201, "create users");
  const rec = await seedUser(s, "users", { email: USER_EMAIL }, USER_PASSWORD);
  const users = s.app.schemas.get("users")!;
  const user = (await s.app.sessions.issue(users, rec)).token;
  return { admin, usersId: r.data.id, userId: rec.id, user };
}
