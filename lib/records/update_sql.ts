/**
 * The UPDATE statement of a record write: its SQL and how each value it sets
 * is encoded, made once per entity schema and list of fields set (a PATCH
 * of `n` builds no SQL and looks up no field after its first time).
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import {
  type ColumnKind,
  type Dialect,
  physicalName,
  type SqlValue,
} from "../db/storage.ts";
import { tableOf } from "../schema/ddl.ts";
import { kindOf } from "../schema/field_types.ts";
import { allFields } from "../schema/builtin.ts";
import type { EntitySchema } from "../schema/types.ts";
import type { CheckedInput } from "./codec.ts";

/** An update by id, ready to run: `sql` with `params`, then the id. */
export interface UpdateStatement {
  /** `UPDATE "t" SET "a" = ?, …, "updated" = ? WHERE "id" = ?` */
  readonly sql: string;
  /** `sql` up to its WHERE: `UPDATE "t" SET "a" = ?, …, "updated" = ?` */
  readonly head: string;
  /** The encoded values, `updated` last (the id is not among them). */
  readonly params: SqlValue[];
  /** Column → encoded value, as a stored row holds them. */
  readonly columns: Map<string, SqlValue>;
}

interface Plan {
  sql: string;
  head: string;
  /** Column and kind of each value, in the order of the names. */
  columns: { column: string; kind: ColumnKind }[];
}

/** Plans kept per schema object (a schema change makes a new object). */
const MAX_PLANS = 64;
const plans = new WeakMap<EntitySchema, Map<string, Plan>>();

function planOf(schema: EntitySchema, names: string[]): Plan {
  let byNames = plans.get(schema);
  const key = names.join("\n");
  const known = byNames?.get(key);
  if (known) return known;
  const fields = new Map(allFields(schema).map((f) => [f.name, f]));
  const columns = names.map((name) => {
    const f = fields.get(name);
    if (!f) {
      throw new MoonbaseError(
        "invalid",
        `Cannot accept record: no field ${name}`,
      );
    }
    return { column: physicalName(name), kind: kindOf(f) };
  });
  const sets = columns.map((c) => `"${c.column}" = ?`).join(", ");
  const head = `UPDATE ${tableOf(schema.name)} SET ${sets}`;
  const plan = { sql: `${head} WHERE "id" = ?`, head, columns };
  if (!byNames || byNames.size >= MAX_PLANS) {
    byNames = new Map();
    plans.set(schema, byNames);
  }
  byNames.set(key, plan);
  return plan;
}

/**
 * The update setting `values` (checked input) and `updated` to now.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { updateStatement } from "moonbase/lib/records/update_sql.ts";
 * import { sqliteDialect } from "moonbase/lib/db/sqlite_dialect.ts";
 * import type { EntitySchema } from "moonbase/lib/schema/types.ts";
 * const schema = {
 *   id: "t1", name: "tasks", type: "base", view_query: "", has_api: true,
 *   is_system: false, created: "", updated: "",
 *   fields: [{ name: "done", type: "bool" }],
 * } as unknown as EntitySchema;
 * const u = updateStatement(schema, new Map([["done", true]]), sqliteDialect);
 * assert.equal(u.sql, 'UPDATE "tasks" SET "done" = ?, "updated" = ? WHERE "id" = ?');
 * assert.equal(u.params[0], 1);
 * assert.equal(u.columns.get("done"), 1);
 * assert.equal(typeof u.columns.get("updated"), "string");
 * ```
 */
export function updateStatement(
  schema: EntitySchema,
  values: CheckedInput,
  dialect: Dialect,
): UpdateStatement {
  const names: string[] = [], given: unknown[] = [];
  for (const [name, value] of values) {
    if (name === "updated") continue;
    names.push(name);
    given.push(value);
  }
  names.push("updated");
  given.push(new Date().toISOString());
  const plan = planOf(schema, names);
  const params: SqlValue[] = new Array(given.length);
  const columns = new Map<string, SqlValue>();
  for (let i = 0; i < given.length; i++) {
    const { column, kind } = plan.columns[i];
    const v = dialect.encode(kind, given[i]);
    params[i] = v;
    columns.set(column, v);
  }
  return { sql: plan.sql, head: plan.head, params, columns };
}
