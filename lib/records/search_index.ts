/**
 * Filling an entity's search index from its records (when `searchable` is
 * turned on for a live entity), inside the schema change's transaction, in
 * batches with progress in the logs. The tables and triggers are
 * lib/schema/search_ddl.ts's.
 *
 * @module
 */

import type { Dialect, Queryable } from "../db/storage.ts";
import { fillSearchSql } from "../schema/search_ddl.ts";
import { tableOf } from "../schema/ddl.ts";
import type { EntitySchema } from "../schema/types.ts";

/** Records indexed per statement. */
const BATCH = 2000;
/** A progress line at most every this many records. */
const REPORT_EVERY = 20_000;

/**
 * Indexes every record of `schema` into its (new, empty) search table;
 * `note` gets a line when it starts, every {@link REPORT_EVERY} records,
 * and when it ends.
 */
export async function fillSearch(
  tx: Queryable,
  dialect: Dialect,
  schema: EntitySchema,
  note: (message: string, data: Record<string, unknown>) => void,
): Promise<void> {
  const [{ n }] = await tx.query(
    `SELECT COUNT(*) AS n FROM ${tableOf(schema.name)}`,
  );
  const total = Number(n);
  const started = performance.now();
  const data = (done: number) => ({ entity: schema.name, done, total });
  note(`search index of ${schema.name}: indexing ${total} records`, data(0));
  let after = "", done = 0, reported = 0;
  const table = tableOf(schema.name);
  while (true) {
    // The last id of the batch, in the database's order (its collation).
    const [last] = await tx.query(
      `SELECT "id" FROM ${table} WHERE "id" > ? ORDER BY "id" LIMIT 1 OFFSET ${
        BATCH - 1
      }`,
      [after],
    );
    const upto = last === undefined ? undefined : String(last.id);
    const { sql, params } = fillSearchSql(schema, dialect, after, upto);
    done += await tx.run(sql, params);
    if (upto === undefined) break;
    after = upto;
    if (done - reported >= REPORT_EVERY) {
      reported = done;
      note(
        `search index of ${schema.name}: ${done} of ${total} records`,
        data(done),
      );
    }
  }
  note(
    `search index of ${schema.name}: ${done} records indexed in ${
      Math.round(performance.now() - started)
    } ms`,
    data(done),
  );
}
