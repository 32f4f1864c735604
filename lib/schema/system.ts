/**
 * System tables: `mb_tables` (schemas), `mb_admins` (admin accounts),
 * `mb_meta` (settings such as the schema version), `mb_revoked` (revoked
 * token ids), `mb_cutoffs` (per-user "tokens issued before"), `mb_ratelimit`
 * (login attempt counters shared by every instance), `mb_cron_runs` (the
 * cron ticks claimed, one instance each), `mb_events` (record changes for
 * realtime subscribers: lib/realtime/event_log.ts), `mb_files` (the ledger
 * of the files this database's uploads wrote: lib/files/ledger.ts),
 * `mb_oauth2_spent` and `mb_oauth2_links` (OAuth2 sign-in: used code
 * verifiers, and provider identities linked to users: lib/auth/oauth2).
 * `mb_settings` (the app's settings, shared by every instance:
 * lib/settings/store.ts), `mb_outbox` (mail waiting to be sent:
 * lib/mail/outbox.ts), `mb_migrations` (the migration files applied:
 * lib/migrations).
 *
 * @module
 */

import { boundedDdl } from "../db/ddl_lock.ts";
import type { Storage } from "../db/storage.ts";
import { ensureTextFunctions } from "../db/pg_text.ts";
import { textVersion } from "../rules/text_fold.ts";
import { createSql } from "./ddl.ts";
import { adminOnlyRules, type EntitySchema } from "./types.ts";

/** The built-in admin-accounts entity. */
export const ADMIN_SCHEMA: EntitySchema = {
  id: "mb_admins",
  name: "mb_admins",
  type: "auth",
  fields: [],
  view_query: "",
  rules: adminOnlyRules(),
  has_api: false,
  is_system: true,
  created: "1970-01-01T00:00:00.000Z",
  updated: "1970-01-01T00:00:00.000Z",
};

/** `mb_events."size"`: the bytes of an event's bodies (retention and resume budgets count them). */
const EVENT_SIZE_COLUMN = `"size" BIGINT NOT NULL DEFAULT 0,`;

/**
 * A log written before events had sizes: adds the column and measures the
 * rows kept (at most what retention keeps, once).
 */
async function addEventSizes(store: Storage): Promise<void> {
  try {
    await store.query(`SELECT "size" FROM "mb_events" WHERE 1 = 0`);
    return;
  } catch {
    // No such column: added below.
  }
  const pg = store.dialect.name === "postgres";
  const bytes = (col: string) =>
    pg ? `octet_length("${col}")` : `length(CAST("${col}" AS BLOB))`;
  await boundedDdl(store, "mb_events", async (tx) => {
    await tx.exec(
      `ALTER TABLE "mb_events" ADD COLUMN ${pg ? "IF NOT EXISTS " : ""}${
        EVENT_SIZE_COLUMN.slice(0, -1)
      }`,
    );
    await tx.run(
      `UPDATE "mb_events" SET "size" = ${bytes("record")} + COALESCE(${
        bytes("previous")
      }, 0)`,
    );
  });
}

/**
 * Creates the system tables when missing (idempotent).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SqliteStorage } from "moonbase/lib/db/sqlite.ts";
 * import { ensureSystemTables } from "moonbase/lib/schema/system.ts";
 * const db = new SqliteStorage(":memory:");
 * await ensureSystemTables(db);
 * await ensureSystemTables(db); // idempotent
 * assert.deepEqual(
 *   await db.query(`SELECT "key", "value" FROM "mb_meta" WHERE "key" = 'schema_version'`),
 *   [{ key: "schema_version", value: "0" }],
 * );
 * await db.close();
 * ```
 */
export async function ensureSystemTables(store: Storage): Promise<boolean> {
  const d = store.dialect;
  const text = d.columnType("text"), int = d.columnType("int");
  const stmts = [
    `CREATE TABLE IF NOT EXISTS "mb_tables" ("id" ${text} PRIMARY KEY, "name" ${text} NOT NULL, "lname" ${text} NOT NULL UNIQUE, "type" ${text} NOT NULL, "schema" ${text} NOT NULL, "created" ${text} NOT NULL, "updated" ${text} NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS "mb_meta" ("key" ${text} PRIMARY KEY, "value" ${text} NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS "mb_revoked" ("jti" ${text} PRIMARY KEY, "exp" ${int} NOT NULL, "created" ${int} NOT NULL)`,
    `CREATE INDEX IF NOT EXISTS "mb_revoked_created" ON "mb_revoked" ("created")`,
    `CREATE TABLE IF NOT EXISTS "mb_cutoffs" ("key" ${text} PRIMARY KEY, "cutoff" ${int} NOT NULL, "keep_jti" ${text} NOT NULL, "created" ${int} NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS "mb_ratelimit" ("key" ${text} PRIMARY KEY, "window_start" ${int} NOT NULL, "count" ${int} NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS "mb_cron_runs" ("job" ${text} NOT NULL, "tick" ${int} NOT NULL, "instance" ${text} NOT NULL, "created" ${int} NOT NULL, PRIMARY KEY ("job", "tick"))`,
    `CREATE TABLE IF NOT EXISTS "mb_events" (${
      // SQLite: the rowid (no AUTOINCREMENT: pruning always keeps the newest
      // row, so ids never go back; an id a rolled-back write took is reused,
      // but that write's event was never seen).
      d.name === "sqlite"
        ? `"id" INTEGER PRIMARY KEY`
        : `"id" BIGSERIAL PRIMARY KEY`}, "entity" ${text} NOT NULL, "entity_id" ${text} NOT NULL, "record_id" ${text} NOT NULL, "action" ${text} NOT NULL, "at" ${int} NOT NULL, ${
      // Before the bodies: SQLite reads it without walking their overflow pages.
      EVENT_SIZE_COLUMN} "record" ${text} NOT NULL, "previous" ${text})`,
    `CREATE TABLE IF NOT EXISTS "mb_files" ("entity_id" ${text} NOT NULL, "name" ${text} NOT NULL, "created" ${int} NOT NULL, PRIMARY KEY ("entity_id", "name"))`,
    // OAuth2 sign-in (lib/auth/oauth2): the code verifiers used (kept until
    // they expire: a replay is refused), and which user an issuer's subject is.
    `CREATE TABLE IF NOT EXISTS "mb_oauth2_spent" ("id" ${text} PRIMARY KEY, "expires" ${int} NOT NULL)`,
    `CREATE INDEX IF NOT EXISTS "mb_oauth2_spent_expires" ON "mb_oauth2_spent" ("expires")`,
    `CREATE TABLE IF NOT EXISTS "mb_oauth2_links" ("entity_id" ${text} NOT NULL, "issuer" ${text} NOT NULL, "subject" ${text} NOT NULL, "provider" ${text} NOT NULL, "user_id" ${text} NOT NULL, "created" ${int} NOT NULL, "last_login" ${int} NOT NULL, PRIMARY KEY ("entity_id", "issuer", "subject"))`,
    `CREATE INDEX IF NOT EXISTS "mb_oauth2_links_user" ON "mb_oauth2_links" ("entity_id", "user_id")`,
    // Migration files applied (lib/migrations): one row each, by file name.
    `CREATE TABLE IF NOT EXISTS "mb_migrations" ("name" ${text} PRIMARY KEY, "applied" ${text} NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS "mb_settings" ("key" ${text} PRIMARY KEY, "value" ${text} NOT NULL, "updated" ${int} NOT NULL)`,
    // One row per message until it is delivered (then deleted) or given up
    // (status 'failed', its text wiped: it may hold a token).
    `CREATE TABLE IF NOT EXISTS "mb_outbox" ("id" ${text} PRIMARY KEY, "purpose" ${text} NOT NULL, "entity" ${text} NOT NULL, "recipient" ${text} NOT NULL, "subject" ${text} NOT NULL, "text_body" ${text} NOT NULL, "html_body" ${text} NOT NULL, "status" ${text} NOT NULL, "attempts" ${int} NOT NULL, "next_at" ${int} NOT NULL, "claimed_until" ${int} NOT NULL, "last_error" ${text} NOT NULL, "created" ${int} NOT NULL)`,
    `CREATE INDEX IF NOT EXISTS "mb_outbox_due" ON "mb_outbox" ("status", "next_at")`,
    ...createSql(ADMIN_SCHEMA, d).map((s) =>
      s.replace(/^CREATE (UNIQUE )?(TABLE|INDEX)/, "CREATE $1$2 IF NOT EXISTS")
    ),
  ];
  for (let attempt = 0;; attempt++) {
    try {
      await boundedDdl(store, "the system tables", async (tx) => {
        for (const s of stmts) await tx.exec(s);
        await tx.run(
          `INSERT INTO "mb_meta" ("key", "value") VALUES ('schema_version', '0') ON CONFLICT ("key") DO NOTHING`,
        );
      });
      await addEventSizes(store);
      await ensureTextFunctions(store);
      return await textVersionMoved(store);
    } catch (err) {
      // Two instances starting at once on one PostgreSQL may race on CREATE … IF NOT EXISTS.
      if (attempt >= 3) throw err;
      await new Promise((r) => setTimeout(r, 100 * (attempt + 1)));
    }
  }
}

/**
 * True when the database's text was folded by another Unicode version than
 * this runtime's (`mb_meta` `text_version`, lib/rules/text_fold.ts
 * `textVersion`): `fold(…)` and search indexes need rebuilding
 * (`Registry.refold`), after which {@link saveTextVersion} records the new
 * one. A database without the key takes this runtime's.
 */
async function textVersionMoved(store: Storage): Promise<boolean> {
  await store.run(
    `INSERT INTO "mb_meta" ("key", "value") VALUES ('text_version', ?) ON CONFLICT ("key") DO NOTHING`,
    [textVersion()],
  );
  const [row] = await store.query(
    `SELECT "value" FROM "mb_meta" WHERE "key" = 'text_version'`,
  );
  return String(row?.value) !== textVersion();
}

/** Records that the database's text is folded by this runtime's Unicode. */
export async function saveTextVersion(store: Storage): Promise<void> {
  await store.run(
    `UPDATE "mb_meta" SET "value" = ? WHERE "key" = 'text_version'`,
    [textVersion()],
  );
}

/**
 * This database's identity: a random id stored once in `mb_meta` (key
 * `database_id`) the first time it is asked for, the same for every
 * instance and every later start. A data directory records the id of the
 * database it belongs to (lib/files/data_dir.ts).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SqliteStorage } from "moonbase/lib/db/sqlite.ts";
 * import { databaseId, ensureSystemTables } from "moonbase/lib/schema/system.ts";
 * const db = new SqliteStorage(":memory:");
 * await ensureSystemTables(db);
 * const id = await databaseId(db);
 * assert.equal(await databaseId(db), id);
 * await db.close();
 * ```
 */
export async function databaseId(store: Storage): Promise<string> {
  await store.run(
    `INSERT INTO "mb_meta" ("key", "value") VALUES ('database_id', ?) ON CONFLICT ("key") DO NOTHING`,
    [crypto.randomUUID()],
  );
  const rows = await store.query(
    `SELECT "value" FROM "mb_meta" WHERE "key" = 'database_id'`,
  );
  return String(rows[0].value);
}

/**
 * Where this database lives, to tell it from a copy that carries the same
 * `database_id` (a PostgreSQL database restored from a dump or made from
 * it as a template): `pg:<cluster's system identifier>/<database oid>`
 * (`?` for an identifier the role may not read). Undefined on SQLite,
 * whose file lives in its data directory: a copy is another directory.
 * A copy of the whole cluster's files (a physical backup) keeps both.
 */
export async function databaseHome(
  store: Storage,
): Promise<string | undefined> {
  if (store.dialect.name !== "postgres") return undefined;
  const oid = await store.query(
    `SELECT "oid"::text AS "oid" FROM "pg_database" WHERE "datname" = current_database()`,
  );
  let system = "?";
  try {
    const rows = await store.query(
      `SELECT "system_identifier"::text AS "id" FROM pg_control_system()`,
    );
    system = String(rows[0]?.id ?? "?");
  } catch { /* not readable by this role: the oid alone tells copies apart */ }
  return `pg:${system}/${String(oid[0]?.oid ?? "?")}`;
}
