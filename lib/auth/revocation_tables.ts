/**
 * The columns and counter row revocations need beyond the system tables
 * (`mb_seq`; `seq` on `mb_revoked` and `mb_cutoffs`; `gen` on `mb_cutoffs`).
 *
 * @module
 */

import type { Queryable, Storage } from "../db/storage.ts";
import { boundedDdl } from "../db/ddl_lock.ts";

/**
 * Adds the `seq` columns to `mb_revoked` and `mb_cutoffs`, `gen` to
 * `mb_cutoffs`, and the counter row (idempotent; rows from before have
 * `seq` 0 and are read by the first poll, and `gen` 0). Two instances starting at once may race: retried.
 */
export async function ensureSequence(store: Storage): Promise<void> {
  const int = store.dialect.columnType("int");
  const text = store.dialect.columnType("text");
  for (let attempt = 0;; attempt++) {
    try {
      await boundedDdl(store, "mb_revoked and mb_cutoffs", async (tx) => {
        await tx.exec(
          `CREATE TABLE IF NOT EXISTS "mb_seq" ("name" ${text} PRIMARY KEY, "value" ${int} NOT NULL)`,
        );
        await tx.run(
          `INSERT INTO "mb_seq" ("name", "value") VALUES ('revocation', 0) ON CONFLICT ("name") DO NOTHING`,
        );
        const added = [
          ["mb_revoked", "seq"],
          ["mb_cutoffs", "seq"],
          ["mb_cutoffs", "gen"],
        ];
        for (const [table, column] of added) {
          if (!(await hasColumn(tx, store, table, column))) {
            await tx.exec(
              `ALTER TABLE "${table}" ADD COLUMN "${column}" ${int} NOT NULL DEFAULT 0`,
            );
          }
        }
        for (const table of ["mb_revoked", "mb_cutoffs"]) {
          await tx.exec(
            `CREATE INDEX IF NOT EXISTS "${table}_seq" ON "${table}" ("seq")`,
          );
        }
      });
      return;
    } catch (err) {
      if (attempt >= 3) throw err;
      await new Promise((r) => setTimeout(r, 100 * (attempt + 1)));
    }
  }
}

async function hasColumn(
  tx: Queryable,
  store: Storage,
  table: string,
  column: string,
): Promise<boolean> {
  const rows = store.dialect.name === "postgres"
    ? await tx.query(
      `SELECT 1 AS "one" FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?`,
      [table, column],
    )
    : (await tx.query(`SELECT "name" FROM pragma_table_info(?)`, [table]))
      .filter((r) => r.name === column);
  return rows.length > 0;
}
