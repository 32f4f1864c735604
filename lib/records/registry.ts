/**
 * The schema registry: loads schemas from `mb_tables`, keeps Entity objects
 * in memory, and creates, changes and drops entities in one transaction
 * each. With several instances on one database, a schema version in
 * `mb_meta` tells the others to reload.
 *
 * Over 350 lines: loading and the schema changes share the maps of
 * entities, the version and the queue of changes; a split into two classes
 * is left for when the change planning (create/update/remove) moves out.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { physicalName, type Queryable, type Storage } from "../db/storage.ts";
import { ADMIN_SCHEMA } from "../schema/system.ts";
import { newSchema } from "../schema/new_schema.ts";
import type { RelationRef } from "./crud.ts";
import { createSql, dropSql } from "../schema/ddl.ts";
import { Entity } from "./entity.ts";
import {
  retarget,
  runSchemaChange,
  SchemaMoved,
  storedFileNames,
} from "./schema_change.ts";
import type { EntityEnv } from "./entity_env.ts";
import { openScope } from "./write_scope.ts";
import { planPatch } from "../schema/migrate.ts";
import { saveSchema } from "../schema/stored.ts";
import type { SchemaContext } from "../schema/validate.ts";
import type { EntitySchema, EntityType } from "../schema/types.ts";
import {
  auditViews,
  guardView,
  readersOf,
  refusedViews,
  snapshotViews,
  type ViewWorldEntity,
} from "../schema/views.ts";
import { allFields } from "../schema/builtin.ts";
import {
  refuseBrokenRules,
  type RuleCheck,
  ruleProblems,
  type StoredRuleProblem,
} from "./rule_names.ts";

/** A line for the operator's log. */
export type RegistryWarning = (
  message: string,
  data: Record<string, unknown>,
) => void;

/** Holds every entity; the one way to change schemas. */
export class Registry {
  #store: Storage;
  #byName = new Map<string, Entity>();
  #byId = new Map<string, Entity>();
  #version = "";
  /** The version read out (`current`), and the one calls meanwhile wait for. */
  #sent: Promise<void> | undefined;
  #next: Promise<void> | undefined;
  /** The stored schema text of each entity, with its object. */
  #stored = new Map<string, { text: string; entity: Entity }>();
  /** Views that break the view rule (id → problem): their records are not served. */
  #refused = new Map<string, string>();
  #checkExpr: RuleCheck;
  #env: EntityEnv;
  #warn: RegistryWarning;
  /** Called after a schema change commits (announces it to other instances). */
  onChange: (() => void) | undefined;
  /** The schema changes of this instance, one after another. */
  #changes: Promise<unknown> = Promise.resolve();

  /**
   * `checkExpr` validates custom rule expressions, with the names they may
   * read when given (returns a problem or undefined); `warn` tells the
   * operator what the registry could not do.
   */
  constructor(
    store: Storage,
    checkExpr: RuleCheck,
    env: EntityEnv,
    warn: RegistryWarning,
  ) {
    this.#env = env;
    this.#warn = warn;
    this.#store = store;
    this.#checkExpr = checkExpr;
  }

  /** Loads every schema from the database. */
  async load(): Promise<void> {
    // The version first: schemas read after it are at least that new, so a
    // change committed in between shows as a version to catch up with (the
    // other order could keep old schemas under the new version for good).
    const meta = await this.#store.query(
      `SELECT "value" FROM "mb_meta" WHERE "key" = 'schema_version'`,
    );
    const rows = await this.#store.query(
      `SELECT "schema" FROM "mb_tables" ORDER BY "created", "id"`,
    );
    // An entity whose stored schema is unchanged keeps its object: requests
    // in flight (a write reading its body) tell a changed entity by identity.
    const before = this.#stored;
    this.#stored = new Map();
    this.#byName.clear();
    this.#byId.clear();
    this.#put(ADMIN_SCHEMA);
    for (const row of rows) {
      const text = String(row.schema);
      const schema = JSON.parse(text) as EntitySchema;
      const kept = before.get(schema.id);
      this.#put(schema, text, kept?.text === text ? kept.entity : undefined);
    }
    this.#version = String(meta[0]?.value ?? "0");
    this.#refused = await refusedViews(
      this.#store,
      this.#store.dialect,
      this.#world(),
    ).catch((err) => {
      // Each view's own inspection failing is handled inside; this is the
      // database failing meanwhile: the schemas are loaded, say so.
      this.#warn("cannot check the views against the view rule", {
        error: err instanceof Error ? err.message : String(err),
      });
      return new Map<string, string>();
    });
  }

  /** Why the view `id` may not be served (it breaks the view rule), if it may not. */
  viewRefusal(id: string): string | undefined {
    return this.#refused.get(id);
  }

  /** Views whose records are not served, with the reason (for the operator's log). */
  refusedViews(): { name: string; problem: string }[] {
    return [...this.#refused].map(([id, problem]) => ({
      name: this.#byId.get(id)?.name ?? id,
      problem,
    }));
  }

  /**
   * Stored custom rules that read a name their entity (or every auth
   * entity) does not have — saved by an older version: they are served as
   * saved, and refuse everyone (for the operator's log).
   */
  ruleProblems(): StoredRuleProblem[] {
    return ruleProblems(this.#world(), this.#checkExpr);
  }

  /** The schema version the schemas in memory were loaded at (`mb_meta`). */
  get version(): string {
    return this.#version;
  }

  /** Reloads when another instance changed a schema. */
  async refreshIfChanged(): Promise<void> {
    if (await this.#storedVersion() !== this.#version) await this.load();
  }

  /**
   * PostgreSQL (schemas shared by every instance): resolves once the
   * schemas in memory are at least as new as those stored when it was
   * called — a read of the version row sent after the call, and a reload
   * when another instance changed them. One read at a time: calls made
   * while one is out share the next. Undefined on SQLite (one process: its
   * isolates catch up in `InstanceSync.fresh`), and inside a write's
   * transaction (a hook's nested operation, a batch's request): the outer
   * write checked before it began, and a read of the version outside its
   * transaction could wait for a connection that transaction holds.
   */
  current(): Promise<void> | undefined {
    if (this.#store.dialect.name !== "postgres") return undefined;
    if (openScope(this.#store)) return undefined;
    if (this.#next) return this.#next;
    const out = this.#sent;
    if (!out) return this.#send();
    // The call that sent `out` reports its failure; this one sends anew.
    const next: Promise<void> = out.catch(() => {}).then(() => {
      this.#next = undefined;
      return this.#send();
    });
    return this.#next = next;
  }

  #send(): Promise<void> {
    const sent: Promise<void> = this.refreshIfChanged().finally(() => {
      if (this.#sent === sent) this.#sent = undefined;
    });
    return this.#sent = sent;
  }

  async #storedVersion(): Promise<string> {
    const meta = await this.#store.query(
      `SELECT "value" FROM "mb_meta" WHERE "key" = 'schema_version'`,
    );
    return String(meta[0]?.value ?? "0");
  }

  #put(schema: EntitySchema, text?: string, kept?: Entity): void {
    const entity = kept ?? new Entity(
      schema,
      this.#store,
      (name) => this.refsOf(name),
      this.#env,
      (name) => this.byName(name),
    );
    this.#byName.set(schema.name.toLowerCase(), entity);
    this.#byId.set(schema.id, entity);
    if (text !== undefined) this.#stored.set(schema.id, { text, entity });
  }

  /** Relation fields (of any entity) that point at `name`. */
  refsOf(name: string): RelationRef[] {
    const out: RelationRef[] = [];
    const lname = name.toLowerCase();
    for (const e of this.#byName.values()) {
      for (const field of e.schema.fields) {
        if (
          field.type === "relation" &&
          field.foreign_key?.entity.toLowerCase() === lname
        ) {
          out.push({ schema: e.schema, field });
        }
      }
    }
    return out;
  }

  /** Every entity, system ones first. */
  all(): Entity[] {
    return [...this.#byName.values()].sort((a, b) =>
      Number(b.isSystem) - Number(a.isSystem) ||
      a.schema.created.localeCompare(b.schema.created)
    );
  }

  /** An entity by exact name (case-insensitive). */
  byName(name: string): Entity | undefined {
    return this.#byName.get(name.toLowerCase());
  }

  /** An entity by id or name. */
  get(idOrName: string): Entity | undefined {
    return this.#byId.get(idOrName) ?? this.byName(idOrName);
  }

  #context(): SchemaContext {
    return {
      entityType: (name: string): EntityType | undefined =>
        this.byName(name)?.type,
      checkExpr: (expr) => this.#checkExpr(expr)?.message,
    };
  }

  /**
   * Runs a schema change after this instance's earlier ones, planned against
   * the schemas in memory; when another isolate or instance changed them
   * meanwhile, reloads and plans again (a few times, then 409).
   */
  #change<T>(plan: (version: string) => Promise<T>): Promise<T> {
    const run = async () => {
      for (let attempt = 0;; attempt++) {
        const version = this.#version;
        try {
          return await plan(version);
        } catch (err) {
          // A refusal (no such entity or field, a name taken, ...) may come
          // from schemas another instance has replaced: plan again on theirs.
          const refused = err instanceof MoonbaseError &&
            await this.#storedVersion().then((v) => v !== version, () => false);
          if (!(err instanceof SchemaMoved) && !refused) throw err;
          if (attempt >= 4) {
            throw new MoonbaseError(
              "conflict",
              "Cannot change entity: the schemas keep changing meanwhile; try again",
            );
          }
          await this.load(); // #write reloaded already; cheap to be sure
        }
      }
    };
    const out = this.#changes.then(run, run);
    // The queue only orders changes; the caller of this one gets its failure.
    this.#changes = out.catch(() => {});
    return out;
  }

  /** Creates an entity from a schema object (docs/reference/schemas.md). */
  create(input: Record<string, unknown>): Promise<Entity> {
    return this.#change((version) => this.#create(input, version));
  }

  async #create(
    input: Record<string, unknown>,
    version: string,
  ): Promise<Entity> {
    const schema = newSchema(input, this.#context(), (name) => {
      if (this.byName(name)) {
        throw new MoonbaseError(
          "conflict",
          `Cannot create entity: "${name}" already exists`,
        );
      }
      this.#tableFree(name, "create");
    });
    const { name, type, created: now } = schema;
    await this.#write(schema, "create", async (tx) => {
      // A new table can only matter to a view that names it already (one left
      // over from before views were guarded): audit only then.
      const before = type === "view"
        ? undefined
        : await snapshotViews(tx, this.#store.dialect);
      for (const s of createSql(schema, this.#store.dialect)) await tx.exec(s);
      const world = this.#world(schema);
      if (type === "view") {
        schema.fields = await guardView(tx, this.#store.dialect, world, schema);
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
        ? await this.#audit(tx, schema, "create", before, world)
        : [];
      refuseBrokenRules(
        this.#world(),
        this.#world(schema, moved),
        { action: "create", subject: name },
        schema.id,
        this.#checkExpr,
      );
    }, version);
    return this.get(schema.id)!;
  }

  /** Applies a partial schema (PATCH). */
  update(idOrName: string, input: Record<string, unknown>): Promise<Entity> {
    return this.#change((version) => this.#update(idOrName, input, version));
  }

  async #update(
    idOrName: string,
    input: Record<string, unknown>,
    version: string,
  ): Promise<Entity> {
    const current = this.#mutable(idOrName, "change");
    if (typeof input.name === "string") {
      this.#tableFree(input.name, "rename", current.id);
    }
    const plan = planPatch(
      current.schema,
      input,
      this.#context(),
      this.#store.dialect,
      (n) => this.byName(n),
    );
    // Files of dropped file fields: read their names before the columns go, delete after the commit.
    const kept = new Set(plan.schema.fields.map((f) => f.id));
    const dropped = current.schema.fields.filter((f) =>
      (f.type === "file" || f.type === "files") && !f.system && !kept.has(f.id)
    );
    const orphans: string[] = [];
    await this.#write(
      plan.schema,
      "change",
      async (tx) => {
        const before = plan.statements.length > 0
          ? await snapshotViews(tx, this.#store.dialect)
          : undefined;
        orphans.push(
          ...await storedFileNames(
            tx,
            this.#store.dialect,
            current.schema,
            dropped,
          ),
        );
        for (const s of plan.statements) await tx.exec(s);
        for (const f of plan.fills) await tx.run(f.sql, f.params);
        const world = this.#world(plan.schema);
        if (plan.schema.type === "view" && plan.statements.length > 0) {
          plan.schema.fields = await guardView(
            tx,
            this.#store.dialect,
            world,
            plan.schema,
          );
        }
        // Views whose columns moved with this change (SQLite's `SELECT *`
        // follows a renamed or dropped field) are checked with their new
        // columns: their rules may read a column that is gone.
        const moved = before
          ? await this.#audit(tx, plan.schema, "change", before, world)
          : [];
        refuseBrokenRules(
          this.#world(),
          this.#world(plan.schema, moved),
          { action: "change", subject: current.name },
          current.id,
          this.#checkExpr,
        );
        if (plan.schema.name !== current.name) {
          const refs = this.refsOf(current.name).filter((r) =>
            r.schema.id !== current.id
          );
          await retarget(tx, refs, current.name, plan.schema.name);
        }
        await saveSchema(tx, plan.schema);
      },
      version,
      current.name,
    );
    const entity = this.get(plan.schema.id)!;
    if (this.#env.files && orphans.length > 0) {
      await this.#env.files.remove(entity.id, orphans);
    }
    return entity;
  }

  /** Drops an entity and its table. */
  remove(idOrName: string): Promise<void> {
    return this.#change((version) => this.#remove(idOrName, version));
  }

  async #remove(idOrName: string, version: string): Promise<void> {
    const entity = this.#mutable(idOrName, "delete");
    const refs = this.refsOf(entity.name).filter((r) =>
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
    const readers = await readersOf(
      this.#store,
      this.#store.dialect,
      this.#world(),
      entity.name,
    );
    if (readers.length > 0) {
      throw new MoonbaseError(
        "conflict",
        `Cannot delete entity ${entity.name}: read by view ${
          readers.join(", ")
        } (change or delete the view first)`,
      );
    }
    refuseBrokenRules(
      this.#world(),
      this.#world().filter((e) => e.schema.id !== entity.id),
      { action: "delete", subject: entity.name },
      entity.id,
      this.#checkExpr,
    );
    await this.#write(entity.schema, "delete", async (tx) => {
      const before = await snapshotViews(tx, this.#store.dialect);
      await tx.exec(dropSql(entity.schema));
      await tx.run(`DELETE FROM "mb_tables" WHERE "id" = ?`, [entity.id]);
      const world = this.#world().filter((e) => e.schema.id !== entity.id);
      await this.#audit(tx, entity.schema, "delete", before, world);
    }, version);
    await this.#env.files?.removeEntity(entity.id);
    if (entity.type === "auth") await this.#env.usersRemoved?.(entity.id);
  }

  /**
   * Refuses a name whose table would be another entity's table but for case
   * (long names are stored under a hashed prefix): PostgreSQL keeps both
   * tables apart, while the view rule and SQLite match tables ignoring case.
   */
  #tableFree(name: string, action: string, self?: string): void {
    const table = physicalName(name).toLowerCase();
    const other = this.all().find((e) =>
      e.id !== self && physicalName(e.name).toLowerCase() === table
    );
    if (other && other.name.toLowerCase() !== name.toLowerCase()) {
      throw new MoonbaseError(
        "conflict",
        `Cannot ${action} entity: "${
          name.slice(0, 64)
        }" would share the table of entity ${other.name}`,
      );
    }
  }

  #mutable(idOrName: string, action: string): Entity {
    const entity = this.get(idOrName);
    if (!entity) {
      throw new MoonbaseError(
        "not_found",
        `Cannot ${action} entity: no entity ${
          JSON.stringify(idOrName.slice(0, 80))
        }`,
      );
    }
    if (entity.isSystem) {
      throw new MoonbaseError(
        "forbidden",
        `Cannot ${action} entity ${entity.name}: it is a system entity`,
      );
    }
    return entity;
  }

  /**
   * Every entity as views see it; `changed` and the views whose columns
   * `moved` replace (or add) their own entries.
   */
  #world(
    changed?: EntitySchema,
    moved: readonly EntitySchema[] = [],
  ): ViewWorldEntity[] {
    const replaced = new Set(moved.map((m) => m.id));
    if (changed) replaced.add(changed.id);
    const out: ViewWorldEntity[] = this.all()
      .filter((e) => !replaced.has(e.id))
      .map((e) => ({ schema: e.schema, fields: e.fields }));
    for (const m of moved) out.push({ schema: m, fields: allFields(m) });
    if (changed) out.push({ schema: changed, fields: allFields(changed) });
    return out;
  }

  /**
   * Checks the other views after a change's statements; saves views whose
   * columns moved, and returns them.
   */
  async #audit(
    tx: Queryable,
    schema: EntitySchema,
    action: string,
    before: Awaited<ReturnType<typeof snapshotViews>>,
    world: ViewWorldEntity[],
  ): Promise<EntitySchema[]> {
    const moved = await auditViews(tx, this.#store.dialect, world, {
      id: schema.id,
      name: schema.name,
      action,
      after: action === "delete" ? undefined : schema.name,
    }, before);
    for (const v of moved) await saveSchema(tx, v);
    return moved;
  }

  async #write(
    schema: EntitySchema,
    action: string,
    fn: (tx: Queryable) => Promise<void>,
    version: string,
    table = schema.name,
  ): Promise<void> {
    try {
      await runSchemaChange(
        this.#store,
        schema,
        action,
        fn,
        () => readersOf(this.#store, this.#store.dialect, this.#world(), table),
        version,
      );
    } finally {
      await this.load();
    }
    this.onChange?.();
  }
}
