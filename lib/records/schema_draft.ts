/**
 * The schemas as a set of schema changes sees them while it runs: the
 * registry's schemas when it begins, then each change applied in turn, so
 * the third change of an import is planned and checked against the first
 * two (lib/records/schema_steps.ts). Nothing here touches the database.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { physicalName } from "../db/storage.ts";
import { allFields } from "../schema/builtin.ts";
import type { SchemaContext } from "../schema/validate.ts";
import type { EntitySchema, EntityType } from "../schema/types.ts";
import type { ViewWorldEntity } from "../schema/views.ts";
import type { RelationRef } from "./crud.ts";
import type { RuleCheck } from "./rule_names.ts";

/** Every entity of a change set, changed as its changes run. */
export class SchemaDraft {
  #entries: ViewWorldEntity[];

  /** `entries`: the registry's entities (system ones included) when the set begins. */
  constructor(entries: readonly ViewWorldEntity[]) {
    this.#entries = [...entries];
  }

  /** The schemas now, in order (system entities included). */
  schemas(): EntitySchema[] {
    return this.#entries.map((e) => e.schema);
  }

  /** An entity by id, else by name (case-insensitive). */
  get(idOrName: string): EntitySchema | undefined {
    return this.#entries.find((e) => e.schema.id === idOrName)?.schema ??
      this.byName(idOrName);
  }

  /** An entity by name (case-insensitive). */
  byName(name: string): EntitySchema | undefined {
    const lname = name.toLowerCase();
    return this.#entries.find((e) => e.schema.name.toLowerCase() === lname)
      ?.schema;
  }

  /** Adds an entity, or replaces the one with its id. */
  put(schema: EntitySchema): void {
    const entry = { schema, fields: allFields(schema) };
    const at = this.#entries.findIndex((e) => e.schema.id === schema.id);
    if (at >= 0) this.#entries[at] = entry;
    else this.#entries.push(entry);
  }

  /** Removes an entity. */
  drop(id: string): void {
    this.#entries = this.#entries.filter((e) => e.schema.id !== id);
  }

  /**
   * Every entity as views and rules see it; `changed` and the views whose
   * columns `moved` replace (or add) their own entries.
   */
  world(
    changed?: EntitySchema,
    moved: readonly EntitySchema[] = [],
  ): ViewWorldEntity[] {
    const replaced = new Set(moved.map((m) => m.id));
    if (changed) replaced.add(changed.id);
    const out = this.#entries.filter((e) => !replaced.has(e.schema.id));
    for (const m of moved) out.push({ schema: m, fields: allFields(m) });
    if (changed) out.push({ schema: changed, fields: allFields(changed) });
    return out;
  }

  /** Relation fields (of any entity) that point at `name`. */
  refsOf(name: string): RelationRef[] {
    const lname = name.toLowerCase();
    const out: RelationRef[] = [];
    for (const { schema } of this.#entries) {
      for (const field of schema.fields) {
        if (
          field.type === "relation" &&
          field.foreign_key?.entity.toLowerCase() === lname
        ) out.push({ schema, field });
      }
    }
    return out;
  }

  /** What validation asks of the other entities. */
  context(check: RuleCheck): SchemaContext {
    return {
      entityType: (name: string): EntityType | undefined =>
        this.byName(name)?.type,
      checkExpr: (expr) => check(expr)?.message,
    };
  }

  /**
   * Refuses a name whose table would be another entity's table but for case
   * (long names are stored under a hashed prefix): PostgreSQL keeps both
   * tables apart, while the view rule and SQLite match tables ignoring case.
   */
  tableFree(name: string, action: string, self?: string): void {
    const table = physicalName(name).toLowerCase();
    const other = this.#entries.find((e) =>
      e.schema.id !== self &&
      physicalName(e.schema.name).toLowerCase() === table
    )?.schema;
    if (other && other.name.toLowerCase() !== name.toLowerCase()) {
      throw new MoonbaseError(
        "conflict",
        `Cannot ${action} entity: "${
          name.slice(0, 64)
        }" would share the table of entity ${other.name}`,
      );
    }
  }

  /** True when no entity has an index with this id (index ids name database indexes). */
  indexIdFree(id: string): boolean {
    return !this.#entries.some((e) =>
      (e.schema.indexes ?? []).some((i) => i.id === id)
    );
  }
}
