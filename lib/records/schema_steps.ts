/**
 * The three schema changes — create, change (PATCH), delete — as steps of a
 * set of changes that runs in one transaction (`Registry.apply`): each step
 * is planned and checked against a {@link SchemaDraft} (the schemas with
 * the set's earlier steps applied), runs its statements on the
 * transaction, and updates the draft. Each guard has its home here or
 * below (lib/schema, rule_names.ts, views.ts); a single API change is a set
 * of one.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { Dialect, Queryable } from "../db/storage.ts";
import { createSql, dropSql } from "../schema/ddl.ts";
import {
  createSearchSql,
  dropSearchTablesSql,
  dropSearchTriggersSql,
  searchableFields,
} from "../schema/search_ddl.ts";
import { fillSearch } from "./search_index.ts";
import { type KeptIds, newSchema } from "../schema/new_schema.ts";
import { planPatch } from "../schema/migrate.ts";
import { saveSchema } from "../schema/stored.ts";
import type { EntitySchema } from "../schema/types.ts";
import {
  auditViews,
  guardView,
  readersOf,
  snapshotViews,
  type ViewSnapshot,
  type ViewWorldEntity,
} from "../schema/views.ts";
import type { EntityEnv } from "./entity_env.ts";
import { refuseBrokenRules, type RuleCheck } from "./rule_names.ts";
import type { SchemaDraft } from "./schema_draft.ts";
import {
  type ChangeSubject,
  retarget,
  storedFileNames,
} from "./schema_change.ts";

/**
 * One change of a set. `keepIds`: ids the input gives (entity, fields,
 * indexes) are kept where free — an import or a migration file, so a schema
 * has the same ids on every server; the API's own create and PATCH assign
 * new ones.
 */
export type SchemaChange =
  | { action: "create"; input: Record<string, unknown>; keepIds?: boolean }
  | {
    action: "update";
    entity: string;
    input: Record<string, unknown>;
    keepIds?: boolean;
  }
  | { action: "delete"; entity: string };

/** What the steps need of the registry. */
export interface StepHost {
  dialect: Dialect;
  checkExpr: RuleCheck;
  env: EntityEnv;
  /** A line for the operator's log about long work (a search index filled). */
  note?: (message: string, data: Record<string, unknown>) => void;
}

/** A set's running state: the transaction, its draft, and work for after the commit. */
export interface StepRun {
  tx: Queryable;
  draft: SchemaDraft;
  /** Names the change under way (for the error a database failure becomes). */
  mark(subject: ChangeSubject): void;
  /** Work once the set committed (files of dropped fields and entities). */
  after: (() => Promise<void>)[];
}

/** Runs one change; returns the schema it made or changed (undefined for a delete). */
export function runStep(
  host: StepHost,
  run: StepRun,
  change: SchemaChange,
): Promise<EntitySchema | undefined> {
  if (change.action === "create") return createStep(host, run, change);
  if (change.action === "update") return updateStep(host, run, change);
  return deleteStep(host, run, change.entity).then(() => undefined);
}

function kept(
  draft: SchemaDraft,
  on: boolean | undefined,
): KeptIds | undefined {
  if (!on) return undefined;
  return {
    entityFree: (id) => draft.get(id) === undefined,
    indexFree: (id) => draft.indexIdFree(id),
  };
}

async function createStep(
  host: StepHost,
  { tx, draft, mark }: StepRun,
  change: Extract<SchemaChange, { action: "create" }>,
): Promise<EntitySchema> {
  const { dialect, checkExpr } = host;
  const schema = newSchema(
    change.input,
    draft.context(checkExpr),
    (name) => {
      if (draft.byName(name)) {
        throw new MoonbaseError(
          "conflict",
          `Cannot create entity: "${name}" already exists`,
        );
      }
      draft.tableFree(name, "create");
    },
    kept(draft, change.keepIds),
  );
  const { name, type, created: now } = schema;
  mark({ schema, action: "create", table: name });
  // A new table can only matter to a view that names it already (one left
  // over from before views were guarded): audit only then.
  const before = type === "view" ? undefined : await snapshotViews(tx, dialect);
  for (const s of createSql(schema, dialect)) await tx.exec(s);
  for (const s of createSearchSql(schema, dialect)) await tx.exec(s);
  const world = draft.world(schema);
  if (type === "view") {
    schema.fields = await guardView(tx, dialect, world, schema);
  }
  await tx.run(
    `INSERT INTO "mb_tables" ("id", "name", "lname", "type", "schema", "created", "updated") VALUES (?, ?, ?, ?, ?, ?, ?)`,
    [
      schema.id,
      name,
      name.toLowerCase(),
      type,
      JSON.stringify(schema),
      now,
      now,
    ],
  );
  const moved = before
    ? await audit(tx, dialect, schema, "create", before, world)
    : [];
  refuseBrokenRules(
    draft.world(),
    draft.world(schema, moved),
    { action: "create", subject: name },
    schema.id,
    checkExpr,
  );
  for (const m of moved) draft.put(m);
  draft.put(schema);
  return schema;
}

/** The entity a change or delete names: 404 when missing, 403 for a system entity. */
function mutable(
  draft: SchemaDraft,
  idOrName: string,
  action: string,
): EntitySchema {
  const schema = draft.get(idOrName);
  if (!schema) {
    throw new MoonbaseError(
      "not_found",
      `Cannot ${action} entity: no entity ${
        JSON.stringify(idOrName.slice(0, 80))
      }`,
    );
  }
  if (schema.is_system) {
    throw new MoonbaseError(
      "forbidden",
      `Cannot ${action} entity ${schema.name}: it is a system entity`,
    );
  }
  return schema;
}

async function updateStep(
  host: StepHost,
  { tx, draft, mark, after }: StepRun,
  change: Extract<SchemaChange, { action: "update" }>,
): Promise<EntitySchema> {
  const { dialect, checkExpr, env } = host;
  const { input } = change;
  const current = mutable(draft, change.entity, "change");
  if (typeof input.name === "string") {
    draft.tableFree(input.name, "rename", current.id);
  }
  const plan = planPatch(
    current,
    input,
    draft.context(checkExpr),
    dialect,
    (n) => draft.byName(n),
    kept(draft, change.keepIds),
  );
  mark({ schema: plan.schema, action: "change", table: current.name });
  // Files of dropped file fields: read their names before the columns go, delete after the commit.
  const keptFields = new Set(plan.schema.fields.map((f) => f.id));
  const dropped = current.fields.filter((f) =>
    (f.type === "file" || f.type === "files") && !f.system &&
    !keptFields.has(f.id)
  );
  const before = plan.statements.length > 0
    ? await snapshotViews(tx, dialect)
    : undefined;
  const orphans = await storedFileNames(tx, dialect, current, dropped);
  for (const s of plan.statements) await tx.exec(s);
  for (const f of plan.fills) await tx.run(f.sql, f.params);
  if (plan.fillSearch) {
    await fillSearch(tx, dialect, plan.schema, host.note ?? (() => {}));
  }
  const world = draft.world(plan.schema);
  if (plan.schema.type === "view" && plan.statements.length > 0) {
    plan.schema.fields = await guardView(tx, dialect, world, plan.schema);
  }
  // Views whose columns moved with this change (SQLite's `SELECT *`
  // follows a renamed or dropped field) are checked with their new
  // columns: their rules may read a column that is gone.
  const moved = before
    ? await audit(tx, dialect, plan.schema, "change", before, world)
    : [];
  refuseBrokenRules(
    draft.world(),
    draft.world(plan.schema, moved),
    { action: "change", subject: current.name },
    current.id,
    checkExpr,
  );
  for (const m of moved) draft.put(m);
  if (plan.schema.name !== current.name) {
    const refs = draft.refsOf(current.name).filter((r) =>
      r.schema.id !== current.id
    );
    for (
      const other of await retarget(tx, refs, current.name, plan.schema.name)
    ) draft.put(other);
  }
  await saveSchema(tx, plan.schema);
  draft.put(plan.schema);
  const files = env.files;
  if (files && orphans.length > 0) {
    after.push(async () => {
      await files.remove(current.id, orphans);
    });
  }
  return plan.schema;
}

async function deleteStep(
  host: StepHost,
  { tx, draft, mark, after }: StepRun,
  idOrName: string,
): Promise<void> {
  const { dialect, checkExpr, env } = host;
  const entity = mutable(draft, idOrName, "delete");
  const refs = draft.refsOf(entity.name).filter((r) =>
    r.schema.id !== entity.id
  );
  if (refs.length > 0) {
    throw new MoonbaseError(
      "conflict",
      `Cannot delete entity ${entity.name}: referenced by ${
        refs.map((r) => `${r.schema.name}.${r.field.name}`).join(", ")
      }`,
    );
  }
  const readers = await readersOf(tx, dialect, draft.world(), entity.name);
  if (readers.length > 0) {
    throw new MoonbaseError(
      "conflict",
      `Cannot delete entity ${entity.name}: read by view ${
        readers.join(", ")
      } (change or delete the view first)`,
    );
  }
  const rest = draft.world().filter((e) => e.schema.id !== entity.id);
  refuseBrokenRules(
    draft.world(),
    rest,
    { action: "delete", subject: entity.name },
    entity.id,
    checkExpr,
  );
  mark({ schema: entity, action: "delete", table: entity.name });
  const before = await snapshotViews(tx, dialect);
  if (searchableFields(entity).length > 0) {
    // PostgreSQL drops a trigger by its table: before the table goes.
    for (
      const s of [
        ...dropSearchTriggersSql(entity, dialect),
        ...dropSearchTablesSql(entity, dialect),
      ]
    ) await tx.exec(s);
  }
  await tx.exec(dropSql(entity));
  await tx.run(`DELETE FROM "mb_tables" WHERE "id" = ?`, [entity.id]);
  await audit(tx, dialect, entity, "delete", before, rest);
  draft.drop(entity.id);
  after.push(async () => {
    await env.files?.removeEntity(entity.id);
    if (entity.type === "auth") await env.usersRemoved?.(entity.id);
  });
}

/**
 * Checks the other views after a change's statements; saves views whose
 * columns moved, and returns them.
 */
async function audit(
  tx: Queryable,
  dialect: Dialect,
  schema: EntitySchema,
  action: string,
  before: ViewSnapshot,
  world: ViewWorldEntity[],
): Promise<EntitySchema[]> {
  const moved = await auditViews(tx, dialect, world, {
    id: schema.id,
    name: schema.name,
    action,
    after: action === "delete" ? undefined : schema.name,
  }, before);
  for (const v of moved) await saveSchema(tx, v);
  return moved;
}
