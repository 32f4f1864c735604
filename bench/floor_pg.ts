/**
 * The PostgreSQL ceiling: a bare `Deno.serve` handler doing just the
 * PostgreSQL work of a scenario with postgres.js (the driver Moonbase uses,
 * its pool of single-connection clients and its options: prepared
 * statements, a parameterless SELECT too; int8 as numbers), no framework; bench/floor.ts is the same
 * for SQLite. Usage: `floor_pg.ts <connection url> [<pool size>]` (the pool
 * size defaults to Moonbase's: the cores, from 2 to 10).
 *
 * Routes: `GET /health` (`SELECT 1`), `GET /items/:id`, `GET /notes/:id`
 * (token: its HMAC verified once and cached, as Moonbase caches verified
 * tokens; then Moonbase's two reads, the user behind it and the record
 * with its owner check), `GET /list`
 * (Moonbase's list SQL: its columns, `ORDER BY "id" ASC LIMIT 51`, the 51st
 * row telling whether there is more; the reply carries the last id shown
 * as the cursor's value, unsealed), `GET /filtered` (`n >= 2000 && n < 4000
 * && tag == "t3"`, sorted by `-n`, Moonbase's WHERE and ORDER BY, on
 * connections that plan it for its values as Moonbase's do:
 * lib/db/postgres.ts `queryCustomPlan`),
 * `GET /aggregate` (Moonbase's statement for `group=status&count=true&
 * sum=total` over `orders`, groups ordered and sums rounded as it does),
 * `POST /create` (one INSERT), `PATCH /items/:id` (one UPDATE … RETURNING),
 * `PATCH /items-rt/:id`: the work of Moonbase's PATCH with realtime on, one
 * statement (the row locked and read as JSON, the UPDATE, the `mb_events`
 * row with both records as JSON built by PostgreSQL, under the shared
 * advisory lock: lib/records/fused_writes.ts, lib/realtime/event_log.ts).
 *
 * @module
 */

// deno-lint-ignore no-import-prefix
import postgres from "npm:postgres@3.4.7";
import { postgresDialect } from "../lib/db/postgres_dialect.ts";
import { searchWords } from "../lib/rules/text_fold.ts";
import { rankedSearchSql } from "../lib/records/search_query.ts";
import { ARTICLES, SEARCH_QUERY } from "./search_seed.ts";
import { tokenSubject } from "./bare_token.ts";

const url = Deno.args[0];
if (!url) throw new Error("Cannot start: usage floor_pg.ts <url> [<pool>]");
const size = Number(Deno.args[1]) ||
  Math.max(2, Math.min(10, navigator.hardwareConcurrency || 2));

/** A connection: a postgres.js client of one, and its unsettled queries. */
interface Lane {
  sql: postgres.Sql;
  pending: number;
}
const asNumber = {
  serialize: (x: unknown) => String(x),
  parse: (x: string) => Number(x),
};
const openLane = (customPlans: boolean): Lane => ({
  sql: postgres(url, {
    max: 1,
    idle_timeout: 0,
    onnotice: () => {},
    connection: {
      statement_timeout: 30_000,
      ...customPlans && { plan_cache_mode: "force_custom_plan" },
    },
    types: {
      int8: { to: 20, from: [20], ...asNumber },
      numeric: { to: 1700, from: [1700], ...asNumber },
    },
  }),
  pending: 0,
});
const lanes: Lane[] = Array.from({ length: size }, () => openLane(false));
/** Moonbase's twins for a filtered list (opened on first use, as its are). */
let customLanes: Lane[] | undefined;

// postgres.js reads `simple` though its types do not name it.
const PREPARED = { prepare: true, simple: false } as const;

/**
 * Runs a prepared statement on the least busy connection (`customPlan`: of
 * the twins); rows as arrays.
 */
async function values(
  text: string,
  params: unknown[],
  customPlan = false,
): Promise<unknown[][]> {
  const pool = customPlan
    ? customLanes ??= Array.from({ length: size }, () => openLane(true))
    : lanes;
  let lane = pool[0];
  for (const l of pool) if (l.pending < lane.pending) lane = l;
  lane.pending++;
  try {
    // As Moonbase (lib/db/pg_client.ts): prepared, a SELECT without
    // parameters too (postgres.js would send it as a simple query).
    return await lane.sql.unsafe(
      text,
      params as postgres.ParameterOrJSON<never>[],
      PREPARED,
    ).values();
  } finally {
    lane.pending--;
  }
}

const names = ["id", "created", "updated", "title", "n", "tag"];
const cols = names.map((n) => `"${n}"`).join(", ");
const GET = `SELECT ${cols} FROM "items" WHERE "id" = $1`;
const LIST = `SELECT ${cols} FROM "items" ORDER BY "id" ASC LIMIT 51`;
// Moonbase's compiled filter (its NULL checks and casts), and its order.
const FILTERED = [
  `SELECT ${cols} FROM "items" WHERE (((("n" IS NOT NULL AND "n" >= $1::bigint)`,
  `AND "n" < $2::bigint) AND ("tag" IS NOT NULL AND "tag" = $3::text)))`,
  `ORDER BY "n" DESC NULLS LAST, "id" ASC LIMIT 51`,
].join(" ");
const INSERT =
  `INSERT INTO "items" ("id", "created", "updated", "title", "n", "tag") VALUES ($1, $2, $3, $4, $5, $6)`;
const PATCH =
  `UPDATE "items" SET "n" = $1, "updated" = $2 WHERE "id" = $3 RETURNING ${cols}`;

// Search: Moonbase's statement for the scenario's words (when seeded).
const [articles] = await values(
  `SELECT "schema" FROM "mb_tables" WHERE "name" = '${ARTICLES}'`,
  [],
);
const searched = articles && (() => {
  const q = rankedSearchSql(
    JSON.parse(String(articles[0])),
    postgresDialect,
    searchWords(SEARCH_QUERY),
    '"id", "created", "updated", "body"',
    21,
  );
  let n = 0;
  return { sql: q.sql.replace(/\?/g, () => `$${++n}`), params: q.params };
})();

// Token + custom rule: the user behind a verified token, then the record
// and its owner check (Moonbase's two reads; verified tokens are cached).
const USER = `SELECT * FROM "users" WHERE "id" = $1`;
const NOTE =
  `SELECT "id", "created", "updated", "owner", "body" FROM "notes" WHERE "id" = $1`;
const subject = await tokenSubject();
const noteOf = new Function(
  "a",
  `return {${
    ["id", "created", "updated", "owner", "body"].map((c, i) =>
      `${JSON.stringify(c)}: a[${i}]`
    ).join(", ")
  }};`,
) as (a: unknown[]) => Record<string, unknown>;

// PATCH with realtime on, as Moonbase fuses it.
const json = `(SELECT row_to_json("mb:r") FROM (SELECT ${
  names.map((n) => `"items"."${n}" AS "${n}"`).join(", ")
}) AS "mb:r")::text`;
const PATCH_RT = [
  `WITH "mb_write" AS (UPDATE "items" SET "n" = $1, "updated" = $2 FROM`,
  `(SELECT "id" AS "mb:id", ${json} AS "mb:previous" FROM "items" WHERE "id" = $3 FOR UPDATE) AS "mb_old"`,
  `WHERE "items"."id" = "mb_old"."mb:id" RETURNING ${cols}, ${json} AS "mb:record", "mb_old"."mb:previous"),`,
  `"mb_event" AS (INSERT INTO "mb_events" ("entity", "entity_id", "record_id", "action", "at", "size", "record", "previous")`,
  `SELECT $4, $5, $6, $7, $8, octet_length("mb:record") + COALESCE(octet_length("mb:previous"), 0), "mb:record", "mb:previous"`,
  `FROM (SELECT pg_advisory_xact_lock_shared(7020617001)) AS "held", "mb_write" RETURNING "id", "size")`,
  `SELECT ${
    names.map((n) => `"mb_write"."${n}"`).join(", ")
  }, "mb_event"."id" AS "mb:event" FROM "mb_write", "mb_event"`,
].join(" ");
const [{ id: itemsId }] = await lanes[0].sql<{ id: string }[]>`
  SELECT "id" FROM "mb_tables" WHERE "name" = 'items'`;

// One generated object literal per column list, as Moonbase (lib/db/shapes.ts).
const item = new Function(
  "a",
  `return {${
    names.map((c, i) => `${JSON.stringify(c)}: a[${i}]`).join(", ")
  }};`,
) as (a: unknown[]) => Record<string, unknown>;

const headers = { "content-type": "application/json; charset=utf-8" };
const reply = (status: number, data: unknown) =>
  new Response(JSON.stringify({ status, data, error: "" }), {
    status,
    headers,
  });

/** A page of at most 50 from 51 rows, with the last shown id. */
function page(rows: unknown[][]): Response {
  const shown = rows.slice(0, 50).map(item);
  const more = rows.length > 50;
  return reply(200, {
    items: shown,
    items_count: shown.length,
    limit: 50,
    has_more: more,
    cursor: more ? shown[shown.length - 1].id : null,
  });
}

const AGGREGATE =
  `SELECT "status" AS g0, COUNT(*) AS n, SUM("total") AS a0_sum, COUNT("total") AS a0_n FROM "orders" GROUP BY 1 LIMIT 1001`;

/** Aggregate rows (g0, n, a0_sum, a0_n) as Moonbase answers them. */
function groups(rows: unknown[][]) {
  const out = rows.map((r) => ({
    key: { status: r[0] },
    count: Number(r[1]),
    sum: { total: Number(Number(r[2] ?? 0).toPrecision(12)) },
  }));
  out.sort((a, b) => String(a.key.status) < String(b.key.status) ? -1 : 1);
  return { groups: out };
}

async function handle(req: Request, path: string): Promise<Response> {
  if (req.method === "PATCH" && path.startsWith("/items-rt/")) {
    const b = await req.json();
    const now = new Date().toISOString(), id = path.slice(10);
    const [row] = await values(PATCH_RT, [
      b.n,
      now,
      id,
      "items",
      itemsId,
      id,
      "update",
      Date.now(),
    ]);
    return row ? reply(200, item(row)) : reply(404, null);
  }
  if (req.method === "PATCH") {
    const b = await req.json();
    const now = new Date().toISOString();
    const [row] = await values(PATCH, [b.n, now, path.slice(7)]);
    return row ? reply(200, item(row)) : reply(404, null);
  }
  if (req.method === "POST") {
    const b = await req.json();
    const now = new Date().toISOString(), id = crypto.randomUUID();
    await values(INSERT, [id, now, now, b.title, b.n, b.tag]);
    return reply(201, { id, created: now, updated: now, ...b });
  }
  if (path.startsWith("/notes/")) {
    const sub = await subject(req.headers.get("authorization"));
    if (!sub || (await values(USER, [sub])).length === 0) {
      return reply(401, null);
    }
    const [row] = await values(NOTE, [path.slice(7)]);
    if (!row || row[3] !== sub) return reply(404, null);
    return reply(200, noteOf(row));
  }
  if (path.startsWith("/items/")) {
    const [row] = await values(GET, [path.slice(7)]);
    return row ? reply(200, item(row)) : reply(404, null);
  }
  if (path === "/health") {
    await values("SELECT 1 AS ok", []);
    return reply(200, { status: "ok" });
  }
  if (path === "/aggregate") {
    return reply(200, groups(await values(AGGREGATE, [])));
  }
  if (path === "/filtered") {
    return page(await values(FILTERED, [2000, 4000, "t3"], true));
  }
  if (path === "/search" && searched) {
    const rows = await values(searched.sql, searched.params);
    const items = rows.slice(0, 20).map((a) => ({
      id: a[0],
      created: a[1],
      updated: a[2],
      body: a[3],
    }));
    return reply(200, { items, has_more: rows.length > 20 });
  }
  return page(await values(LIST, []));
}

Deno.serve({
  port: 0,
  hostname: "127.0.0.1",
  onListen: ({ port }) => console.log(`listening ${port}`),
}, (req) => handle(req, req.url.slice(req.url.indexOf("/", 8)).split("?")[0]));

// Exit on SIGTERM (the bench stops it so; `--cpu-prof` then writes its profile).
Deno.addSignalListener("SIGTERM", () => {
  Promise.all(
    [...lanes, ...customLanes ?? []].map((l) => l.sql.end({ timeout: 1 })),
  ).finally(() => Deno.exit(0));
});
