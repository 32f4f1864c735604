/**
 * Digests of a database's content, for checking that a move (SQLite to
 * PostgreSQL) carried everything: per table, the row count and a SHA-256
 * over its rows in id order, each row in a canonical JSON form (keys
 * sorted at every depth, so PostgreSQL's JSONB key order does not count).
 * TOTP secrets are left out (each server seals them under its own key).
 *
 * @module
 */

import { createHash } from "node:crypto";
import type { ColumnKind, Storage } from "../db/storage.ts";
import { ADMIN_SCHEMA } from "../schema/system.ts";
import type { EntitySchema } from "../schema/types.ts";
import { pagesOf, tableColumns } from "./create.ts";
import { portable, SYSTEM_TABLES } from "./tables.ts";

/** Rows and digest of one table. */
export interface TableDigest {
  rows: number;
  sha256: string;
}

/**
 * JSON with object keys sorted at every depth.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { canonicalJson } from "moonbase/lib/backup/digest.ts";
 * assert.equal(canonicalJson({ b: 1, a: [{ d: 1, c: 2 }] }), '{"a":[{"c":2,"d":1}],"b":1}');
 * ```
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(
    value,
    (_k, v) =>
      v && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(
          Object.keys(v).sort().map((
            k,
          ) => [k, (v as Record<string, unknown>)[k]]),
        )
        : v,
  );
}

/** The digests of every table a backup carries (files aside). */
export async function tableDigests(
  storage: Storage,
): Promise<Record<string, TableDigest>> {
  const d = storage.dialect;
  const decoded = (k: ColumnKind, v: unknown) => d.decode(k, v);
  return await storage.snapshot(async (q) => {
    const out: Record<string, TableDigest> = {};
    const digest = async (
      table: string,
      columns: [string, ColumnKind][],
      key: readonly string[],
      conv: (k: ColumnKind, v: unknown) => unknown,
      skip?: (row: Record<string, unknown>) => boolean,
    ) => {
      const hash = createHash("sha256");
      let rows = 0;
      for await (const page of pagesOf(q, table, columns, key, conv)) {
        for (const row of page) {
          if (skip?.(row)) continue;
          hash.update(canonicalJson(row) + "\n");
          rows++;
        }
      }
      out[table] = { rows, sha256: hash.digest("hex") };
    };
    const schemaRows = await q.query(
      `SELECT "schema" FROM "mb_tables" ORDER BY "id"`,
    );
    const schemas = schemaRows.map((r) =>
      JSON.parse(String(r.schema)) as EntitySchema
    );
    out.mb_tables = {
      rows: schemas.length,
      sha256: createHash("sha256").update(
        schemas.map((s) => canonicalJson(s)).join("\n"),
      ).digest("hex"),
    };
    await digest("mb_admins", tableColumns(ADMIN_SCHEMA), ["id"], decoded);
    for (const t of SYSTEM_TABLES) {
      const columns = Object.entries(t.columns).filter(([c]) =>
        !(t.name === "mb_totp" && c === "secret")
      );
      await digest(t.name, columns, t.key, portable, t.skip);
    }
    for (const s of schemas) {
      if (s.type !== "view") {
        await digest(s.name, tableColumns(s), ["id"], decoded);
      }
    }
    return out;
  });
}
