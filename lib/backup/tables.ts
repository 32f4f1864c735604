/**
 * What a backup holds besides entity records: the system tables a restored
 * server needs, each with its columns' kinds (so values cross between
 * SQLite and PostgreSQL) and how a restore treats the rows already there.
 *
 * Left out, on purpose: what is transient or belongs to the running server
 * rather than the project — logs (`mb_logs`, `mb_log_blocks`), realtime
 * events (`mb_events`), login counters (`mb_ratelimit`), cron claims,
 * pending one-time codes and account tokens (a new one is one request
 * away), mail waiting to be sent, and `mb_meta` (the database's own id and
 * schema version stay the target's).
 *
 * @module
 */

import type { ColumnKind } from "../db/storage.ts";
import { API_KEY_TABLE } from "../auth/api_keys.ts";
import { originalOf } from "../files/names.ts";

/** A system table in a backup. */
export interface SystemTable {
  name: string;
  /** Column name → kind, in the table's order; the first columns are the key. */
  columns: Record<string, ColumnKind>;
  /** Key columns (for `merge`). */
  key: readonly string[];
  /**
   * `replace`: the backup's rows replace the table's. `merge`: the backup's
   * rows are added, rows already there stay (the file ledger: a file this
   * database wrote stays its own, and is swept once nothing references it).
   */
  restore: "replace" | "merge";
  /** Rows left out of a backup (thumbnails: made again on demand). */
  skip?: (row: Record<string, unknown>) => boolean;
}

const T = "text", I = "int";

/** The system tables of a backup, in the order they are written and restored. */
export const SYSTEM_TABLES: readonly SystemTable[] = [
  {
    name: "mb_settings",
    columns: { key: T, value: T, updated: I },
    key: ["key"],
    restore: "replace",
  },
  {
    name: API_KEY_TABLE,
    columns: {
      id: T,
      name: T,
      entity: T,
      user_id: T,
      hash: T,
      created: T,
      expires: T,
      last_used: T,
    },
    key: ["id"],
    restore: "replace",
  },
  {
    name: "mb_oauth2_links",
    columns: {
      entity_id: T,
      issuer: T,
      subject: T,
      provider: T,
      user_id: T,
      created: I,
      last_login: I,
    },
    key: ["entity_id", "issuer", "subject"],
    restore: "replace",
  },
  {
    // `secret` is written unsealed and sealed again under the restoring
    // server's key (backup_secrets.ts).
    name: "mb_totp",
    columns: {
      entity_id: T,
      user_id: T,
      secret: T,
      enrolled: I,
      last_step: I,
      created: I,
    },
    key: ["entity_id", "user_id"],
    restore: "replace",
  },
  {
    // Which migration files the restored data has been through.
    name: "mb_migrations",
    columns: { name: T, applied: T },
    key: ["name"],
    restore: "replace",
  },
  {
    name: "mb_files",
    columns: { entity_id: T, name: T, created: I },
    key: ["entity_id", "name"],
    restore: "merge",
    // Thumbnails are not backed up: they are made again when asked for.
    skip: (row) => originalOf(String(row.name)) !== undefined,
  },
];

/**
 * A value read from a system table as the backup stores it: integers as
 * numbers (PostgreSQL's BIGINT comes back as a string), text as text.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { portable } from "moonbase/lib/backup/tables.ts";
 * assert.equal(portable("int", "42"), 42);
 * assert.equal(portable("text", "42"), "42");
 * assert.equal(portable("int", null), null);
 * ```
 */
export function portable(kind: ColumnKind, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (kind === "int") return Number(value);
  if (kind === "text") return String(value);
  return value;
}
