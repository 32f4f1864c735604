/**
 * Keeping views honest inside schema transactions: a new view is checked
 * against the view rule from what the database says it reads, and every
 * other schema change is refused when it would change, break or widen what
 * an existing view reads (deleting or renaming an entity or field a view
 * reads; recreating a name a stale view points at as an auth entity).
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import {
  type Dialect,
  ident,
  physicalName,
  type Queryable,
} from "../db/storage.ts";
import {
  inspectView,
  viewDefinitions,
  type ViewInspection,
} from "./view_inspect.ts";
import { ddlReason, repeatedViewColumn } from "./ddl_errors.ts";
import {
  type OriginField,
  repeatedColumn,
  viewFieldsOf,
} from "./view_fields.ts";
import { viewReadProblem } from "./view_query.ts";
import type { EntitySchema, FieldDef } from "./types.ts";

/** An entity as views see it: its schema with every field (built-ins included). */
export interface ViewWorldEntity {
  schema: EntitySchema;
  fields: FieldDef[];
}

/** Lookups of physical names over a set of entities. */
class World {
  #byTable = new Map<string, ViewWorldEntity>();

  constructor(entities: readonly ViewWorldEntity[]) {
    for (const e of entities) {
      this.#byTable.set(physicalName(e.schema.name).toLowerCase(), e);
    }
  }

  entity(table: string): ViewWorldEntity | undefined {
    return this.#byTable.get(table.toLowerCase());
  }

  target = (table: string) => this.entity(table)?.schema;

  origin = (table: string, column: string): OriginField | undefined => {
    const e = this.entity(table);
    const col = column.toLowerCase();
    const field = e?.fields.find((f) =>
      physicalName(f.name).toLowerCase() === col && f.name !== "password"
    );
    return e && field
      ? { entity: e.schema.name, field, view: e.schema.type === "view" }
      : undefined;
  };
}

/**
 * Checks the just-created view `schema` (in `tx`) against the view rule and
 * returns its typed fields; 400 when it may not be created.
 */
export async function guardView(
  tx: Queryable,
  dialect: Dialect,
  entities: readonly ViewWorldEntity[],
  schema: EntitySchema,
): Promise<FieldDef[]> {
  const world = new World(entities);
  let ins: ViewInspection;
  try {
    ins = await inspectView(tx, dialect, physicalName(schema.name));
  } catch (err) {
    const repeated = repeatedViewColumn(err);
    if (repeated !== undefined) throw repeatedColumn(repeated);
    throw new MoonbaseError(
      "invalid",
      `Cannot accept view_query: it does not run (${
        ddlReason(err, schema.view_query)
      })`,
    );
  }
  const problem = viewReadProblem(ins, world.target);
  if (problem) {
    throw new MoonbaseError("invalid", `Cannot accept view_query: ${problem}`);
  }
  return viewFieldsOf(ins.columns, world.origin);
}

/** Every view's definition, and the views that already fail, before a change. */
export interface ViewSnapshot {
  defs: Map<string, string>;
  broken: Set<string>;
}

/** Takes the snapshot a change's audit compares with (before its statements run). */
export async function snapshotViews(
  tx: Queryable,
  dialect: Dialect,
): Promise<ViewSnapshot> {
  const defs = await viewDefinitions(tx, dialect);
  const broken = new Set<string>();
  // A PostgreSQL view always compiles; a SQLite one may name a dropped table.
  if (dialect.name === "sqlite") {
    for (const name of defs.keys()) {
      try {
        await tx.query(`EXPLAIN SELECT * FROM ${ident(name)}`);
      } catch {
        broken.add(name); // the failure is the answer: this view is broken
      }
    }
  }
  return { defs, broken };
}

function conflict(action: string, name: string, why: string): never {
  throw new MoonbaseError(
    "conflict",
    `Cannot ${action} entity ${name}: ${why} (change or delete the view first)`,
  );
}

/**
 * After the statements of a change to `changed` ran in `tx`: every other view
 * must keep its definition, still work, and (when it reads the changed
 * entity) still obey the view rule. Returns the views whose columns moved
 * (SQLite `SELECT *` follows its tables), with their new fields, to save.
 */
export async function auditViews(
  tx: Queryable,
  dialect: Dialect,
  entities: readonly ViewWorldEntity[],
  changed: { id: string; name: string; action: string; after?: string },
  before: ViewSnapshot,
): Promise<EntitySchema[]> {
  const world = new World(entities);
  const after = await viewDefinitions(tx, dialect);
  const moved: EntitySchema[] = [];
  const target = changed.after
    ? physicalName(changed.after).toLowerCase()
    : undefined;
  for (const { schema: v } of entities) {
    if (v.type !== "view" || v.id === changed.id || v.is_system) continue;
    const table = physicalName(v.name);
    // A view that already failed (a table dropped before views were guarded)
    // is not blamed on this change, but once it runs again it obeys the rule.
    const wasBroken = before.broken.has(table);
    const def = after.get(table);
    if (!wasBroken && (def === undefined || def !== before.defs.get(table))) {
      conflict(changed.action, changed.name, `view ${v.name} reads it`);
    }
    let ins: ViewInspection;
    try {
      ins = await inspectView(tx, dialect, table);
    } catch {
      if (wasBroken) continue;
      conflict(
        changed.action,
        changed.name,
        `view ${v.name} would no longer work`,
      );
    }
    if (wasBroken || ins.reads.some((r) => r.toLowerCase() === target)) {
      const problem = viewReadProblem(ins, world.target);
      if (problem) {
        conflict(changed.action, changed.name, `view ${v.name}: ${problem}`);
      }
    }
    let fields: FieldDef[];
    try {
      fields = viewFieldsOf(ins.columns, world.origin);
    } catch {
      conflict(
        changed.action,
        changed.name,
        `view ${v.name} would no longer work`,
      );
    }
    if (JSON.stringify(fields) !== JSON.stringify(v.fields)) {
      moved.push({ ...v, fields });
    }
  }
  return moved;
}

/** Names of the views that read the table `name` (asked of the database; failures skipped). */
export async function readersOf(
  q: Queryable,
  dialect: Dialect,
  entities: readonly ViewWorldEntity[],
  name: string,
): Promise<string[]> {
  const table = physicalName(name).toLowerCase();
  const out: string[] = [];
  for (const { schema: v } of entities) {
    if (v.type !== "view" || v.name.toLowerCase() === name.toLowerCase()) {
      continue;
    }
    try {
      const ins = await inspectView(q, dialect, physicalName(v.name));
      if (ins.reads.some((r) => r.toLowerCase() === table)) out.push(v.name);
    } catch { /* a broken view reads nothing */ }
  }
  return out;
}

/**
 * The views that break the view rule as the database stands (views saved
 * before the rule was enforced, or changed behind Moonbase's back): view id
 * → the problem. A view that does not run is left out (it serves nothing).
 */
export async function refusedViews(
  q: Queryable,
  dialect: Dialect,
  entities: readonly ViewWorldEntity[],
): Promise<Map<string, string>> {
  const world = new World(entities);
  const out = new Map<string, string>();
  for (const { schema: v } of entities) {
    if (v.type !== "view" || v.is_system) continue;
    let ins: ViewInspection;
    try {
      ins = await inspectView(q, dialect, physicalName(v.name));
    } catch {
      continue; // a view that does not run serves nothing: left out (above)
    }
    const problem = viewReadProblem(ins, world.target);
    if (problem) out.set(v.id, problem);
  }
  return out;
}
