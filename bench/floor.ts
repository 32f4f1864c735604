/**
 * The ceiling: a bare `Deno.serve` handler doing just the SQLite work of a
 * scenario (one prepared statement, `JSON.stringify`), no framework. The
 * benchmark measures it beside Moonbase to show how much of each target the
 * database work itself leaves. Usage: `floor.ts <moonbase.db>`.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";

const db = new DatabaseSync(Deno.args[0]);
db.exec(
  "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000",
);
const cols = '"id", "created", "updated", "title", "n", "tag"';
const get = db.prepare(`SELECT ${cols} FROM "items" WHERE "id" = ?`);
const list = db.prepare(`SELECT ${cols} FROM "items" ORDER BY "id" LIMIT 51`);
// Rows as arrays made into plain objects: the fastest way we found (as Moonbase does).
const names = get.columns().map((c) => c.name);
for (const st of [get, list]) {
  (st as typeof st & { setReturnArrays(on: boolean): void }).setReturnArrays(
    true,
  );
}
const objects = (rows: unknown[]) =>
  (rows as unknown[][]).map((a) => {
    const o: Record<string, unknown> = {};
    for (let i = 0; i < names.length; i++) o[names[i]] = a[i];
    return o;
  });
const insert = db.prepare(
  `INSERT INTO "items" (${cols}) VALUES (?, ?, ?, ?, ?, ?)`,
);
const headers = { "content-type": "application/json; charset=utf-8" };
const reply = (status: number, data: unknown) =>
  new Response(JSON.stringify({ status, data, error: "" }), {
    status,
    headers,
  });

Deno.serve({
  port: 0,
  hostname: "127.0.0.1",
  onListen: ({ port }) => console.log(`listening ${port}`),
}, async (req) => {
  const path = req.url.slice(req.url.indexOf("/", 8)).split("?")[0];
  if (req.method === "POST") {
    const b = await req.json();
    const now = new Date().toISOString(), id = crypto.randomUUID();
    insert.run(id, now, now, b.title, b.n, b.tag);
    return reply(201, { id, created: now, updated: now, ...b });
  }
  if (path.startsWith("/items/")) {
    return reply(200, objects(get.all(path.slice(7)))[0]);
  }
  const rows = objects(list.all());
  return reply(200, { items: rows.slice(0, 50), has_more: rows.length > 50 });
});
