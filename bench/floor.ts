/**
 * The ceiling: a bare `Deno.serve` handler doing just the SQLite work of a
 * scenario (its prepared statements, `JSON.stringify`), no framework. The
 * benchmark measures it beside Moonbase to show how much of each target the
 * database work itself leaves. Usage: `floor.ts <moonbase.db> [<logs.db>]`;
 * with a logs file, every request also writes Moonbase's request log row the
 * way Moonbase does (its `Logger` and writer thread): the ceiling with logs
 * on. Routes: `GET /health` (`SELECT 1`), `GET /items/:id`, `GET /notes/:id`
 * (token), `GET /list`, `GET /filtered` (`n >= 2000 && n < 4000 && tag ==
 * "t3"`, sorted by `-n`), `GET /aggregate` (Moonbase's aggregate statement
 * for `group=status&count=true&sum=total` over `orders`, its groups ordered
 * and the sums rounded as Moonbase does), `POST /create`, `PATCH /items/:id`, and
 * `PATCH /items-rt/:id`: the work of Moonbase's PATCH with realtime on, one
 * transaction per request (`BEGIN IMMEDIATE`, the previous record, `UPDATE …
 * RETURNING`, the `mb_events` row with both records as JSON, `COMMIT`).
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
import { sqliteDialect, SqliteStorage } from "../lib/db/sqlite.ts";
import { registerTextFunctions } from "../lib/db/sqlite_text.ts";
import { searchWords } from "../lib/rules/text_fold.ts";
import { rankedSearchSql } from "../lib/records/search_query.ts";
import { ARTICLES, SEARCH_QUERY } from "./search_seed.ts";
import { Logger } from "../lib/logs/logger.ts";
import { LogStore } from "../lib/logs/store.ts";
import { tokenSubject } from "./bare_token.ts";

const db = new DatabaseSync(Deno.args[0]);
db.exec(
  "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000",
);
registerTextFunctions(db);
// Search: Moonbase's statement for the scenario's words (when seeded).
const articles = db.prepare(
  `SELECT "schema" FROM "mb_tables" WHERE "name" = '${ARTICLES}'`,
).get() as { schema: string } | undefined;
const searched = articles &&
  rankedSearchSql(
    JSON.parse(articles.schema),
    sqliteDialect,
    searchWords(SEARCH_QUERY),
    '"id", "created", "updated", "body"',
    21,
  );
const search = searched && db.prepare(searched.sql);
const cols = '"id", "created", "updated", "title", "n", "tag"';
const ping = db.prepare("SELECT 1 AS ok");
const get = db.prepare(`SELECT ${cols} FROM "items" WHERE "id" = ?`);
const list = db.prepare(`SELECT ${cols} FROM "items" ORDER BY "id" LIMIT 51`);
// Filter + sort: the same WHERE and ORDER BY as Moonbase's list query.
const filtered = db.prepare(
  `SELECT ${cols} FROM "items" WHERE "n" >= ? AND "n" < ? AND "tag" = ? ORDER BY "n" DESC NULLS LAST, "id" ASC LIMIT 51`,
);
// Aggregate: the statement Moonbase runs for group=status&count=true&sum=total.
const aggregate = db.prepare(
  `SELECT "status" AS g0, COUNT(*) AS n, SUM("total") AS a0_sum, COUNT("total") AS a0_n FROM "orders" GROUP BY 1 LIMIT 1001`,
);
// PATCH: one UPDATE … RETURNING, as Moonbase does when nothing is read first.
const patch = db.prepare(
  `UPDATE "items" SET "n" = ?, "updated" = ? WHERE "id" = ? RETURNING ${cols}`,
);
// PATCH with realtime on: the record before, the update, its change event.
const previous = db.prepare(`SELECT ${cols} FROM "items" WHERE "id" = ?`);
const event = db.prepare(
  `INSERT INTO "mb_events" ("entity", "entity_id", "record_id", "action", "at", "record", "previous") VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING "id"`,
);
const begin = db.prepare("BEGIN IMMEDIATE"), commit = db.prepare("COMMIT");
const itemsId = String(
  (db.prepare(`SELECT "id" FROM "mb_tables" WHERE "name" = 'items'`)
    .get() as { id: string }).id,
);
// Token + custom rule: the user behind a verified token, then the record
// and its owner check (Moonbase's two reads; verified tokens are cached).
const user = db.prepare(`SELECT * FROM "users" WHERE "id" = ?`);
const note = db.prepare(
  `SELECT "id", "created", "updated", "owner", "body" FROM "notes" WHERE "id" = ?`,
);
// Rows as arrays made into plain objects: the fastest way we found.
const names = get.columns().map((c) => c.name);
for (const st of [get, list, filtered, patch, user, note, previous]) {
  (st as typeof st & { setReturnArrays(on: boolean): void }).setReturnArrays(
    true,
  );
}
// One generated object literal per column list (as Moonbase does: see
// lib/db/shapes.ts); a loop of stores under variable names is ~10× slower.
const literal = (cols: string[]) =>
  new Function(
    "a",
    `return {${
      cols.map((c, i) => `${JSON.stringify(c)}: a[${i}]`).join(", ")
    }};`,
  ) as (a: unknown[]) => Record<string, unknown>;
const item = literal(names);
const objects = (rows: unknown[]) => (rows as unknown[][]).map(item);
const noteOf = literal(note.columns().map((c) => c.name));
const subject = await tokenSubject();
const insert = db.prepare(
  `INSERT INTO "items" (${cols}) VALUES (?, ?, ?, ?, ?, ?)`,
);
const headers = { "content-type": "application/json; charset=utf-8" };
const reply = (status: number, data: unknown) =>
  new Response(JSON.stringify({ status, data, error: "" }), {
    status,
    headers,
  });

/** With a logs file: Moonbase's request log, as Moonbase writes it. */
async function requestLog(file: string | undefined): Promise<Logger | null> {
  if (!file) return null;
  const store = new LogStore(new SqliteStorage(file), file);
  await store.init();
  return new Logger(store, "info", "off");
}
const log = await requestLog(Deno.args[1]);

/** Aggregate rows as Moonbase answers them: ordered by key, sums rounded. */
function groups(rows: Record<string, unknown>[]) {
  const out = rows.map((r) => ({
    key: { status: r.g0 },
    count: Number(r.n),
    sum: { total: Number(Number(r.a0_sum ?? 0).toPrecision(12)) },
  }));
  out.sort((a, b) => String(a.key.status) < String(b.key.status) ? -1 : 1);
  return { groups: out };
}
let seq = 0;

/** PATCH with its change event, in one transaction. */
function patchWithEvent(id: string, n: unknown): Response {
  begin.run();
  try {
    const before = previous.all(id)[0] as unknown as unknown[] | undefined;
    if (!before) {
      commit.run();
      return reply(404, null);
    }
    const row = patch.all(n as number, new Date().toISOString(), id)[0];
    const record = item(row as unknown as unknown[]);
    event.all(
      "items",
      itemsId,
      id,
      "update",
      Date.now(),
      JSON.stringify(record),
      JSON.stringify(item(before)),
    );
    commit.run();
    return reply(200, record);
  } catch (err) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw err;
  }
}

async function handle(req: Request, path: string): Promise<Response> {
  if (req.method === "PATCH" && path.startsWith("/items-rt/")) {
    return patchWithEvent(path.slice(10), (await req.json()).n);
  }
  if (req.method === "PATCH") {
    const b = await req.json();
    const row = patch.all(b.n, new Date().toISOString(), path.slice(7))[0];
    if (!row) return reply(404, null);
    return reply(200, item(row as unknown as unknown[]));
  }
  if (req.method === "POST") {
    const b = await req.json();
    const now = new Date().toISOString(), id = crypto.randomUUID();
    insert.run(id, now, now, b.title, b.n, b.tag);
    return reply(201, { id, created: now, updated: now, ...b });
  }
  if (path.startsWith("/notes/")) {
    const sub = await subject(req.headers.get("authorization"));
    if (!sub || user.all(sub).length === 0) return reply(401, null);
    const row = note.all(path.slice(7))[0] as unknown as
      | unknown[]
      | undefined;
    if (!row || row[3] !== sub) return reply(404, null);
    return reply(200, noteOf(row));
  }
  if (path.startsWith("/items/")) {
    return reply(200, objects(get.all(path.slice(7)))[0]);
  }
  if (path === "/health") {
    ping.all();
    return reply(200, { status: "ok" });
  }
  if (path === "/aggregate") {
    return reply(200, groups(aggregate.all() as Record<string, unknown>[]));
  }
  if (path === "/search" && search && searched) {
    const rows = search.all(...searched.params as string[]) as Record<
      string,
      unknown
    >[];
    const items = rows.slice(0, 20).map(({ mb_rank: _, ...r }) => r);
    return reply(200, { items, has_more: rows.length > 20 });
  }
  const rows = objects(
    path === "/filtered" ? filtered.all(2000, 4000, "t3") : list.all(),
  );
  return reply(200, { items: rows.slice(0, 50), has_more: rows.length > 50 });
}

Deno.serve({
  port: 0,
  hostname: "127.0.0.1",
  onListen: ({ port }) => console.log(`listening ${port}`),
}, async (req, info) => {
  const started = performance.now();
  const path = req.url.slice(req.url.indexOf("/", 8)).split("?")[0];
  const res = await handle(req, path);
  log?.request(
    "info",
    req.method,
    path,
    res.status,
    Math.round((performance.now() - started) * 100) / 100,
    info.remoteAddr.hostname,
    null,
    null,
    `floor-${(++seq).toString(36)}`,
  );
  return res;
});
