/**
 * What a view reads, asked of the database after the view was created (in
 * the same transaction), never guessed from its SQL text.
 *
 * SQLite: the bytecode of `SELECT * FROM <view>` (`EXPLAIN`) opens every
 * b-tree the query reads (`OpenRead`/`ReopenIdx`, root page in `p2`), with
 * views, CTEs and subqueries already expanded; root pages map to tables
 * through `sqlite_schema` (page 1 is `sqlite_schema` itself). Virtual tables
 * (`VOpen`: `pragma_*`, `dbstat`, `sqlite_dbpage`, …) are refused except
 * `json_each` and `json_tree`, recognised by the table object the same
 * connection uses for them; so are recursive CTEs (their queue is read back
 * with `RowData`), since SQLite cannot interrupt a query that never ends.
 * PostgreSQL: see `view_inspect_pg.ts`.
 *
 * @module
 */

import {
  type Dialect,
  ident,
  type Queryable,
  type Row,
} from "../db/storage.ts";
import { inspectPostgres } from "./view_inspect_pg.ts";
import type { ViewColumn, ViewInspection } from "./view_shapes.ts";

export type { ViewColumn, ViewInspection } from "./view_shapes.ts";

const OPENS = new Set(["OpenRead", "ReopenIdx", "OpenWrite"]);

async function vtabsOf(tx: Queryable, sql: string): Promise<Set<string>> {
  const ops = await tx.query(`EXPLAIN ${sql}`);
  return new Set(
    ops.filter((o) => o.opcode === "VOpen").map((o) => String(o.p4)),
  );
}

async function inspectSqlite(
  tx: Queryable,
  physical: string,
): Promise<ViewInspection> {
  const select = `SELECT * FROM ${ident(physical)}`;
  const ops = await tx.query(`EXPLAIN ${select}`);
  const pages = new Map<number, string>([[1, "sqlite_schema"]]);
  for (
    const r of await tx.query(
      `SELECT "tbl_name" AS "t", "rootpage" AS "p" FROM sqlite_schema WHERE "rootpage" > 0`,
    )
  ) pages.set(Number(r.p), String(r.t));
  const json = new Set([
    ...await vtabsOf(tx, `SELECT * FROM json_each('[]')`),
    ...await vtabsOf(tx, `SELECT * FROM json_tree('[]')`),
  ]);
  const reads = new Set<string>(), refused = new Set<string>();
  for (const op of ops) {
    const code = String(op.opcode);
    if (OPENS.has(code)) {
      if (code === "OpenWrite") refused.add("a write");
      if (Number(op.p3) !== 0) refused.add("another database");
      // OPFLAG_P2ISREG (0x40): p2 is a register, not a root page (never in a SELECT).
      if ((Number(op.p5) & 0x40) !== 0) refused.add("an unknown table");
      reads.add(pages.get(Number(op.p2)) ?? "an unknown table");
    } else if (code === "VOpen" && !json.has(String(op.p4))) {
      refused.add("a virtual table (pragma or system table function)");
    } else if (code === "RowData") {
      // The queue of a recursive CTE (the only SELECT that reads rows back
      // with RowData). SQLite cannot interrupt a statement, so a recursion
      // that never ends would block the whole server: no recursion here.
      refused.add("a recursive CTE (SQLite cannot stop one that never ends)");
    }
  }
  return {
    reads: [...reads],
    refused: [...refused],
    columns: await sqliteColumns(tx, physical, select),
  };
}

async function sqliteColumns(
  tx: Queryable,
  physical: string,
  select: string,
): Promise<ViewColumn[]> {
  if (tx.columns) {
    return (await tx.columns(select)).map((c) => ({
      name: c.name,
      ...(c.table && c.column ? { table: c.table, column: c.column } : {}),
      ...(c.type ? { dbType: c.type } : {}),
    }));
  }
  const rows = await tx.query(
    `SELECT "name", "type" FROM pragma_table_xinfo(?)`,
    [physical],
  );
  return rows.map((r) => ({ name: String(r.name) }));
}

/**
 * Asks the database what the view `physical` reads; throws the database's
 * error when the view does not compile.
 */
export function inspectView(
  tx: Queryable,
  dialect: Dialect,
  physical: string,
): Promise<ViewInspection> {
  return dialect.name === "sqlite"
    ? inspectSqlite(tx, physical)
    : inspectPostgres(tx, physical);
}

/** Every view's definition as the database holds it (physical name → text). */
export async function viewDefinitions(
  tx: Queryable,
  dialect: Dialect,
): Promise<Map<string, string>> {
  const rows: Row[] = await tx.query(
    dialect.name === "sqlite"
      ? `SELECT "name", "sql" FROM sqlite_schema WHERE "type" = 'view'`
      : `SELECT c.relname AS "name", pg_get_viewdef(c."oid") AS "sql" FROM pg_class c WHERE c.relkind = 'v' AND c.relnamespace = (SELECT "oid" FROM pg_namespace WHERE nspname = current_schema())`,
  );
  return new Map(rows.map((r) => [String(r.name), String(r.sql)]));
}
