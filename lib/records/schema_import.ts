/**
 * Schema export and import (docs/reference/schemas.md, "Export and
 * import"): the export lists every entity's schema in dependency order; an
 * import matches each of its schemas to an entity (by id when the id
 * exists here, else by name), and plans the creates, changes and deletes
 * that make the schemas here the imported ones, as a set of changes that
 * `Registry.apply` runs in one transaction.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { shownSchema } from "../schema/shown.ts";
import type { EntitySchema } from "../schema/types.ts";
import {
  type ChangeDetail,
  createDetails,
  declaredFields,
  deleteDetails,
  isRaw,
  patchFor,
  type Raw,
} from "./schema_diff.ts";
import { dependencyOrder, relationTarget } from "./schema_order.ts";
import type { SchemaChange } from "./schema_steps.ts";
import type { AppliedChanges, Registry } from "./registry.ts";

/** Most schemas one import may carry. */
export const MAX_IMPORT_SCHEMAS = 1000;

/** One entity an import creates, changes or deletes. */
export interface ImportChange {
  entity: string;
  action: "create" | "update" | "delete";
  details: ChangeDetail[];
}

/** An import request, checked. */
export interface ImportRequest {
  schemas: Raw[];
  deleteMissing: boolean;
  dryRun: boolean;
}

function bad(message: string): never {
  throw new MoonbaseError("invalid", message);
}

/**
 * Checks an import body: `{schemas, delete_missing?: false, dry_run?: true}`
 * (400 naming what is wrong). The schemas themselves are checked as a
 * create or PATCH would check them, when the import runs.
 */
export function readImportRequest(body: unknown): ImportRequest {
  if (!isRaw(body)) bad("Cannot import schemas: the body must be an object");
  for (const key of Object.keys(body)) {
    if (!["schemas", "delete_missing", "dry_run"].includes(key)) {
      bad(
        `Cannot import schemas: unknown key "${
          key.slice(0, 64)
        }" (use schemas, delete_missing, dry_run)`,
      );
    }
  }
  const { schemas, delete_missing = false, dry_run = true } = body;
  if (!Array.isArray(schemas)) {
    bad(
      "Cannot import schemas: schemas must be a list (GET /api/v1/schemas/export gives one)",
    );
  }
  if (schemas.length > MAX_IMPORT_SCHEMAS) {
    bad(`Cannot import schemas: at most ${MAX_IMPORT_SCHEMAS} schemas`);
  }
  if (typeof delete_missing !== "boolean") {
    bad("Cannot accept delete_missing: must be true or false");
  }
  if (typeof dry_run !== "boolean") {
    bad("Cannot accept dry_run: must be true or false");
  }
  const seen = new Map<string, number>();
  schemas.forEach((s, i) => {
    if (!isRaw(s) || typeof s.name !== "string" || s.name === "") {
      bad(
        `Cannot import schemas[${i}]: it must be a schema object with a name`,
      );
    }
    const lname = s.name.toLowerCase();
    if (s.is_system === true || lname.startsWith("mb_")) {
      bad(
        `Cannot import entity ${
          s.name.slice(0, 64)
        }: system entities are not imported`,
      );
    }
    const twin = seen.get(lname);
    if (twin !== undefined) {
      bad(
        `Cannot import schemas[${i}]: schemas[${twin}] has the name ${
          s.name.slice(0, 64)
        } too`,
      );
    }
    seen.set(lname, i);
    if (s.fields !== undefined && !Array.isArray(s.fields)) {
      bad(`Cannot import entity ${s.name.slice(0, 64)}: fields must be a list`);
    }
  });
  return {
    schemas: schemas as Raw[],
    deleteMissing: delete_missing,
    dryRun: dry_run,
  };
}

/**
 * The export: every entity but the system ones, as the schemas API shows
 * them, in dependency order (schema_order.ts; `schemas` in creation order,
 * which settles cycles).
 */
export function exportSchemas(
  schemas: readonly EntitySchema[],
): EntitySchema[] {
  const own = schemas.filter((s) => !s.is_system).map(shownSchema);
  return dependencyOrder(own).map((i) => own[i]);
}

/** An import's changes, and what each does. */
export interface ImportPlan {
  changes: SchemaChange[];
  report: ImportChange[];
}

/** The entity here each imported schema updates (undefined: created). */
function matches(
  live: readonly EntitySchema[],
  wanted: readonly Raw[],
): (EntitySchema | undefined)[] {
  const out: (EntitySchema | undefined)[] = wanted.map((w) =>
    typeof w.id === "string" ? live.find((s) => s.id === w.id) : undefined
  );
  const taken = new Map<string, number>();
  out.forEach((s, i) => s && taken.set(s.id, i));
  wanted.forEach((w, i) => {
    if (out[i]) return;
    const lname = String(w.name).toLowerCase();
    const s = live.find((e) => e.name.toLowerCase() === lname);
    if (!s) return;
    const twin = taken.get(s.id);
    if (twin !== undefined) {
      bad(
        `Cannot import schemas[${i}]: entity ${s.name} is matched by schemas[${twin}] already (by id); rename one of them`,
      );
    }
    out[i] = s;
    taken.set(s.id, i);
  });
  return out;
}

/**
 * Plans an import against the schemas here (`current`, system ones
 * included): creates and changes in dependency order, then the relation
 * fields that close a cycle (with the rules and indexes of their
 * entities), then — with `deleteMissing` — the deletes of entities the
 * import does not list, dependants first. Entities left as they are do
 * not appear.
 */
export function planImport(
  current: readonly EntitySchema[],
  request: ImportRequest,
): ImportPlan {
  const live = current.filter((s) => !s.is_system);
  const wanted = request.schemas;
  const target = matches(live, wanted);
  // Stored name → the name it will have (entities matched by id may be renamed).
  const renames = new Map<string, string>();
  target.forEach((t, i) => {
    if (t) renames.set(t.name.toLowerCase(), String(wanted[i].name));
  });
  const rename = (n: string) => renames.get(n.toLowerCase()) ?? n;
  const pending = new Set(wanted.map((w) => String(w.name).toLowerCase()));
  const changes: SchemaChange[] = [];
  const closing: SchemaChange[] = [];
  const report: ImportChange[] = [];
  for (const i of dependencyOrder(wanted)) {
    const w = wanted[i];
    const name = String(w.name);
    const self = name.toLowerCase();
    // A relation to an entity of this import not made yet closes a cycle.
    const later = (f: unknown) => {
      const to = relationTarget(f);
      return to !== undefined && to !== self && pending.has(to);
    };
    const t = target[i];
    if (!t) {
      const input: Raw = { ...w };
      if (w.type === "view") delete input.fields;
      const deferred = declaredFields(w).filter(later);
      if (deferred.length > 0) {
        input.fields = declaredFields(w).filter((f) => !later(f));
        delete input.rules;
        delete input.indexes;
        const rest: Raw = { fields: deferred };
        if (w.rules !== undefined) rest.rules = w.rules;
        if (w.indexes !== undefined) rest.indexes = w.indexes;
        closing.push({
          action: "update",
          entity: name,
          input: rest,
          keepIds: true,
        });
      }
      changes.push({ action: "create", input, keepIds: true });
      report.push({
        entity: name,
        action: "create",
        details: createDetails(w),
      });
    } else {
      const { input, details } = patchFor(t, w, rename);
      if (details.length > 0 || Object.keys(input).length > 0) {
        const items = Array.isArray(input.fields) ? input.fields as Raw[] : [];
        const deferred = items.filter(later);
        if (deferred.length > 0) {
          input.fields = items.filter((f) => !later(f));
          const rest: Raw = { fields: deferred };
          for (const k of ["rules", "indexes"]) {
            if (input[k] !== undefined) rest[k] = input[k];
            delete input[k];
          }
          closing.push({
            action: "update",
            entity: t.id,
            input: rest,
            keepIds: true,
          });
        }
        changes.push({ action: "update", entity: t.id, input, keepIds: true });
        report.push({ entity: name, action: "update", details });
      }
    }
    pending.delete(self);
  }
  changes.push(...closing);
  if (request.deleteMissing) {
    const kept = new Set(target.filter((t) => t).map((t) => t!.id));
    const gone = live.filter((s) => !kept.has(s.id));
    // Dependants first: the reverse of the dependency order.
    for (const i of dependencyOrder(gone).reverse()) {
      const s = gone[i];
      changes.push({ action: "delete", entity: s.id });
      report.push({
        entity: s.name,
        action: "delete",
        details: deleteDetails(s),
      });
    }
  }
  return { changes, report };
}

/** What an import did (or, in a dry run, would do). */
export interface ImportResult {
  changes: ImportChange[];
  /** The set applied (undefined in a dry run or when nothing changes). */
  applied?: AppliedChanges;
}

/**
 * Runs an import through `registry`: planned against its schemas (again if
 * another instance changes them meanwhile), applied in one transaction —
 * or, in a dry run, applied and rolled back, so it fails as the import
 * would. Nothing to change: no transaction at all.
 */
export async function importSchemas(
  registry: Registry,
  request: ImportRequest,
): Promise<ImportResult> {
  let report: ImportChange[] = [];
  const plan = (schemas: readonly EntitySchema[]) => {
    const p = planImport(schemas, request);
    report = p.report;
    return p.changes;
  };
  if (plan(registry.all().map((e) => e.schema)).length === 0) {
    return { changes: [] };
  }
  const applied = await registry.apply(plan, { dryRun: request.dryRun });
  return { changes: report, applied: request.dryRun ? undefined : applied };
}
