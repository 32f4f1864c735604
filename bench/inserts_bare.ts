/**
 * The insert benchmark's bare handler: a `Deno.serve` doing just the work a
 * chat message's create needs, no framework. `POST /api/v1/entities/messages`
 * with a JSON `{room, text}` and a bearer token: the token's HMAC checked
 * (verified tokens cached, as Moonbase caches them), then one statement that
 * inserts the message only when its author is a member of the room
 * (`INSERT … SELECT … WHERE EXISTS (room_members …)`: the add rule of
 * bench/inserts_seed.ts), answered as Moonbase answers (201 and the record
 * in its envelope; 403 when the rule refuses, 401 without a valid token).
 * No request log, no realtime event row.
 *
 * Usage: `inserts_bare.ts sqlite <moonbase.db>` (node:sqlite with
 * Moonbase's pragmas: WAL, synchronous=NORMAL, foreign keys on) or
 * `inserts_bare.ts postgres <url>` (postgres.js, prepared statements, a
 * pool of Moonbase's default size: the cores, from 2 to 10).
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
// deno-lint-ignore no-import-prefix
import postgres from "npm:postgres@3.4.7";
import { uuidv7 } from "../lib/ids.ts";
import { tokenSubject } from "./bare_token.ts";

const [kind, target] = Deno.args;
if ((kind !== "sqlite" && kind !== "postgres") || !target) {
  throw new Error(
    "Cannot start: usage inserts_bare.ts sqlite <file> | postgres <url>",
  );
}

const COLUMNS = '"id", "created", "updated", "owner", "room", "text"';
const MEMBER = `SELECT 1 FROM "room_members" WHERE "user" = ? AND "room" = ?`;

/** Inserts a message if its owner is in its room; false when refused. */
type Insert = (
  row: [string, string, string, string, string, string],
) => Promise<boolean>;

function sqliteInsert(file: string): Insert {
  const db = new DatabaseSync(file);
  db.exec(
    "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000; PRAGMA foreign_keys=ON",
  );
  const st = db.prepare(
    `INSERT INTO "messages" (${COLUMNS}) SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (${MEMBER})`,
  );
  return (r) => Promise.resolve(st.run(...r, r[3], r[4]).changes === 1);
}

function postgresInsert(url: string): Insert {
  const sql = postgres(url, {
    max: Math.max(2, Math.min(10, navigator.hardwareConcurrency || 2)),
    idle_timeout: 0,
    onnotice: () => {},
  });
  // Every column is TEXT (Moonbase stores dates as ISO text); the casts type
  // the SELECT's parameters, which nothing else would.
  const text =
    `INSERT INTO "messages" (${COLUMNS}) SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::text WHERE EXISTS (${
      MEMBER.replace("?", "$4").replace("?", "$5")
    })`;
  return async (r) => {
    const res = await sql.unsafe(text, r, { prepare: true });
    return res.count === 1;
  };
}

const insert = kind === "sqlite"
  ? sqliteInsert(target)
  : postgresInsert(target);

const subject = await tokenSubject();

const headers = { "content-type": "application/json; charset=utf-8" };
const reply = (status: number, data: unknown, error = "") =>
  new Response(JSON.stringify({ status, data, error }), { status, headers });

Deno.serve({
  port: 0,
  hostname: "127.0.0.1",
  onListen: ({ port }) => console.log(`listening ${port}`),
}, async (req) => {
  if (req.method !== "POST") return reply(405, null, "Cannot serve: POST only");
  const owner = await subject(req.headers.get("authorization"));
  if (!owner) return reply(401, null, "Cannot add messages: sign in");
  const b = await req.json();
  const now = new Date().toISOString(), id = uuidv7();
  const row = [id, now, now, owner, String(b.room), String(b.text)] as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  if (!await insert(row)) {
    return reply(403, null, "Cannot add messages: the add rule refused it");
  }
  return reply(201, {
    id,
    created: now,
    updated: now,
    owner,
    room: b.room,
    text: b.text,
  });
});
