/**
 * The schema registry: loads schemas from `mb_tables`, keeps Entity objects
 * in memory, and runs schema changes — one, or a set (an import, a
 * migration) — in one transaction each set, planned and checked step by
 * step (schema_steps.ts). With several instances on one database, a schema
 * version in `mb_meta` tells the others to reload.
 *
 * Over 350 lines, one idea: the schemas in memory and the one transaction that
 * changes them; kept whole because loading, reloading and applying share the
 * registry's state.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { ident, type Storage } from "../db/storage.ts";
import { ADMIN_SCHEMA } from "../schema/system.ts";
import type { RelationRef } from "./crud.ts";
import { Entity } from "./entity.ts";
import { runSchemaChange, SchemaMoved } from "./schema_change.ts";
import type { EntityEnv } from "./entity_env.ts";
import { current, openScope } from "./write_scope.ts";
import type { EntitySchema } from "../schema/types.ts";
import {
  readersOf,
  refusedViews,
  type ViewWorldEntity,
} from "../schema/views.ts";
import { searchableFields, searchTableOf } from "../schema/search_ddl.ts";
import { fillSearch } from "./search_index.ts";
import {
  type RuleCheck,
  ruleProblems,
  type StoredRuleProblem,
} from "./rule_names.ts";
import { SchemaDraft } from "./schema_draft.ts";
import { runStep, type SchemaChange } from "./schema_steps.ts";

export type { SchemaChange };

/** What a set of schema changes did. */
export interface AppliedChanges {
  /** The schema each change made or changed (undefined for a delete). */
  results: (EntitySchema | undefined)[];
  /** Every schema before the set, and after it (system ones included). */
  before: EntitySchema[];
  after: EntitySchema[];
}

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
  #note: RegistryWarning;
  /** Called after a schema change commits (announces it to other instances). */
  onChange: (() => void) | undefined;
  /** The schema changes of this instance, one after another. */
  #changes: Promise<unknown> = Promise.resolve();

  /**
   * `checkExpr` validates custom rule expressions, with the names they may
   * read when given (returns a problem or undefined); `warn` tells the
   * operator what the registry could not do, `note` how long work goes
   * (a search index being filled).
   */
  constructor(
    store: Storage,
    checkExpr: RuleCheck,
    env: EntityEnv,
    warn: RegistryWarning,
    note: RegistryWarning = () => {},
  ) {
    this.#env = env;
    this.#warn = warn;
    this.#note = note;
    this.#store = store;
    this.#checkExpr = checkExpr;
  }

  /** Loads every schema from the database. */
  async load(): Promise<void> {
    // Inside a write's scope (a migration): what its transaction sees.
    const db = current(this.#store);
    // The version first: schemas read after it are at least that new, so a
    // change committed in between shows as a version to catch up with (the
    // other order could keep old schemas under the new version for good).
    const meta = await db.query(
      `SELECT "value" FROM "mb_meta" WHERE "key" = 'schema_version'`,
    );
    const rows = await db.query(
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
      db,
      db.dialect,
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
    const meta = await current(this.#store).query(
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
          await this.load(); // #apply reloaded already; cheap to be sure
        }
      }
    };
    const out = this.#changes.then(run, run);
    // The queue only orders changes; the caller of this one gets its failure.
    this.#changes = out.catch(() => {});
    return out;
  }

  /** Creates an entity from a schema object (docs/reference/schemas.md). */
  async create(input: Record<string, unknown>): Promise<Entity> {
    const { results } = await this.apply(() => [{ action: "create", input }]);
    return this.get(results[0]!.id)!;
  }

  /** Applies a partial schema (PATCH). */
  async update(
    idOrName: string,
    input: Record<string, unknown>,
  ): Promise<Entity> {
    const { results } = await this.apply(() => [
      { action: "update", entity: idOrName, input },
    ]);
    return this.get(results[0]!.id)!;
  }

  /**
   * Rebuilds what was computed with another runtime's text functions (its
   * Unicode version differs: lib/schema/system.ts `textVersionMoved`): the
   * `fold(…)` indexes and every search index.
   */
  async refold(): Promise<void> {
    const store = this.#store;
    const pg = store.dialect.name === "postgres";
    const indexes = pg
      ? await store.query(
        `SELECT DISTINCT d.objid::regclass::text AS name FROM pg_depend d JOIN pg_proc p ON p.oid = d.refobjid WHERE d.classid = 'pg_class'::regclass AND p.proname = 'mb_fold' AND p.pronamespace = current_schema()::regnamespace`,
      )
      : await store.query(
        `SELECT name FROM sqlite_master WHERE type = 'index' AND sql LIKE '%mb_fold(%'`,
      );
    for (const { name } of indexes) {
      await store.exec(
        pg ? `REINDEX INDEX ${String(name)}` : `REINDEX ${ident(String(name))}`,
      );
    }
    for (const entity of this.all()) {
      if (searchableFields(entity.schema).length === 0) continue;
      await store.transaction(async (tx) => {
        await tx.run(`DELETE FROM "${searchTableOf(entity.schema)}"`);
        await fillSearch(tx, store.dialect, entity.schema, this.#note);
      });
    }
  }

  /** Drops an entity and its table. */
  async remove(idOrName: string): Promise<void> {
    await this.apply(() => [{ action: "delete", entity: idOrName }]);
  }

  /**
   * Runs a set of schema changes in one transaction — all of them or none
   * — with the guards of each single change (lib/records/schema_steps.ts),
   * each change planned against the schemas the earlier ones left, and one
   * reload after. `plan` makes the changes from the schemas in memory (it
   * runs again when another instance changed them meanwhile). With
   * `dryRun` everything runs and is checked, then rolled back.
   *
   * Inside a write's scope (a migration, a before-hook: write_scope.ts) the
   * set joins that write's transaction; what follows its commit (removing
   * files, telling other instances) waits for the outer commit.
   */
  apply(
    plan: (schemas: readonly EntitySchema[]) => SchemaChange[],
    options: { dryRun?: boolean } = {},
  ): Promise<AppliedChanges> {
    return this.#change((version) =>
      this.#apply(plan(this.all().map((e) => e.schema)), version, options)
    );
  }

  async #apply(
    changes: SchemaChange[],
    version: string,
    { dryRun = false }: { dryRun?: boolean },
  ): Promise<AppliedChanges> {
    const draft = new SchemaDraft(
      this.all().map((e) => ({ schema: e.schema, fields: e.fields })),
    );
    const before = draft.schemas();
    const db = current(this.#store);
    const host = {
      dialect: db.dialect,
      checkExpr: this.#checkExpr,
      env: this.#env,
      note: this.#note,
    };
    const after: (() => Promise<void>)[] = [];
    const results: (EntitySchema | undefined)[] = [];
    try {
      await runSchemaChange(
        db,
        async (tx, mark) => {
          const run = { tx, draft, mark, after };
          for (const c of changes) results.push(await runStep(host, run, c));
        },
        (table) => readersOf(db, db.dialect, this.#world(), table),
        version,
        dryRun,
      );
    } finally {
      if (!dryRun) await this.load();
    }
    const out = { results, before, after: draft.schemas() };
    if (dryRun) return out;
    const done = async () => {
      this.onChange?.();
      for (const job of after) await job();
    };
    const scope = openScope(this.#store);
    if (scope) scope.defer(done);
    else await done();
    return out;
  }

  /** Every entity as views see it. */
  #world(): ViewWorldEntity[] {
    return this.all().map((e) => ({ schema: e.schema, fields: e.fields }));
  }
}
