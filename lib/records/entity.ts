/**
 * An entity as programs and the rest of Moonbase see it: accessors over its
 * schema, and the one facade of its record operations — as the program
 * (below any rule: `records`, lib/records/entity_records.ts) or, with
 * `{ as }`, as a caller through the record service (`EntityEnv.callers`),
 * which runs the rule and then `records` itself, never `Entity` again.
 *
 * @module
 */

import type { Dialect, Queryable, Storage } from "../db/storage.ts";
import { MoonbaseError } from "../errors.ts";
import { decodeRow, type RecordData } from "./codec.ts";
import { allFields } from "../schema/builtin.ts";
import { readRow, type RefsOf } from "./crud.ts";
import type { ListResult } from "./list.ts";
import type { AuthValue } from "../caller.ts";
import { columnOf, tableOf } from "../schema/ddl.ts";
import type {
  EntitySchema,
  EntityType,
  FieldDef,
  Rule,
  Rules,
} from "../schema/types.ts";
import type { EntityEnv } from "./entity_env.ts";
import { current } from "./write_scope.ts";
import { EntityRecords } from "./entity_records.ts";

/** A library read: as the program, or as a caller (`as`, by the entity's rules). */
export interface LibraryRead {
  /** Run as this caller, under the entity's rules, as the HTTP API would. */
  as?: AuthValue;
}

/** A library write (`as`: by the entity's rules, as the HTTP API would). */
export interface LibraryWrite extends LibraryRead {
  /**
   * Without `as`: the caller record hooks see as `e.auth` (default: the
   * program itself, as admin); when it changes its own password, its own
   * session stays valid (unless `keepSession` names another).
   */
  caller?: AuthValue;
  /** Update of a password: the session (token id) that stays valid. */
  keepSession?: string;
}

/**
 * An entity (table) with its schema and record operations.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createApp } from "moonbase/mod.ts";
 * const app = await createApp({ dataDir: await Deno.makeTempDir(), quiet: true });
 * const posts = await app.entities.create({
 *   name: "posts", type: "base", fields: [{ name: "title", type: "string", required: true }],
 * });
 * const rec = await posts.create({ title: "Hello" });
 * assert.ok((await posts.read(rec.id as string))?.title === "Hello");
 * assert.ok((await posts.read("missing")) === undefined);
 * assert.ok(await posts.countRecords() === 1 && posts.hasField("title"));
 * await app.close();
 * ```
 */
export class Entity {
  readonly #schema: EntitySchema;
  readonly #base: Storage;
  readonly #env: EntityEnv;
  /** The record operations below any rule (what the record service runs). */
  readonly records: EntityRecords;
  readonly #rules: Readonly<Rules>;
  readonly #fields: FieldDef[];
  readonly #lookup: (name: string) => Entity | undefined;

  /**
   * Wraps a validated schema; use `app.entities` (mod.ts) to create entities.
   * `lookup` finds the other entities (the registry's, now).
   */
  constructor(
    schema: EntitySchema,
    store: Storage,
    refsOf: RefsOf,
    env: EntityEnv,
    lookup: (name: string) => Entity | undefined = () => undefined,
  ) {
    this.#lookup = lookup;
    this.#env = env;
    this.#schema = schema;
    this.#base = store;
    this.records = new EntityRecords(this, schema, store, refsOf, env);
    this.#rules = deepFreeze(structuredClone(schema.rules));
    this.#fields = schema.type === "view"
      ? [...schema.fields]
      : allFields(schema);
  }

  /** The storage, or inside a before-hook the write it runs in. */
  get #store(): Storage {
    return current(this.#base);
  }

  /** Another entity by name (any case), as the registry holds it now. */
  lookup(name: string): Entity | undefined {
    return this.#lookup(name);
  }

  /** Where its records are read now (inside a before-hook or batch: that write). */
  get reads(): Queryable {
    return this.#store;
  }

  /** Entity id. */
  get id(): string {
    return this.#schema.id;
  }
  /** Entity (table) name. */
  get name(): string {
    return this.#schema.name;
  }
  /** `base`, `auth` or `view`. */
  get type(): EntityType {
    return this.#schema.type;
  }
  /** True for `mb_*` system entities. */
  get isSystem(): boolean {
    return this.#schema.is_system;
  }
  /** Whether record routes exist for this entity. */
  get hasApi(): boolean {
    return this.#schema.has_api;
  }
  /** SQL of a view ("" otherwise). */
  get viewQuery(): string {
    return this.#schema.view_query;
  }
  /** Every field, built-ins included. */
  get fields(): FieldDef[] {
    return this.#schema.type === "view"
      ? [...this.#schema.fields]
      : allFields(this.#schema);
  }
  /** The field with this name, if any. */
  field(name: string): FieldDef | undefined {
    return this.#fields.find((f) => f.name === name);
  }
  /** Alias of `field`. */
  findField(name: string): FieldDef | undefined {
    return this.field(name);
  }
  /** True when a field of this name exists. */
  hasField(name: string): boolean {
    return this.field(name) !== undefined;
  }
  /** The five access rules (read-only). */
  get rules(): Readonly<Rules> {
    return this.#rules;
  }
  /** Rule of the list operation. */
  get listRule(): Rule {
    return { ...this.#schema.rules.list };
  }
  /** Rule of the get operation. */
  get getRule(): Rule {
    return { ...this.#schema.rules.get };
  }
  /** Rule of the add operation. */
  get addRule(): Rule {
    return { ...this.#schema.rules.add };
  }
  /** Rule of the update operation. */
  get updateRule(): Rule {
    return { ...this.#schema.rules.update };
  }
  /** Rule of the delete operation. */
  get deleteRule(): Rule {
    return { ...this.#schema.rules.delete };
  }
  /** When the schema last changed. */
  get updated(): string {
    return this.#schema.updated;
  }
  /** The schema object as the schemas API returns it (a copy the caller may change). */
  get schema(): EntitySchema {
    return { ...structuredClone(this.#schema), fields: this.fields };
  }

  /**
   * The same schema, shared and never copied, for hot read paths (decoding
   * rows, a rule's relation reads): the caller must not change it. An
   * entity's schema never changes (a changed schema is a new `Entity`), so
   * it is made once.
   */
  get shape(): Readonly<EntitySchema> {
    return this.#shape ??= Object.freeze({
      ...this.#schema,
      fields: this.fields,
    });
  }
  #shape: Readonly<EntitySchema> | undefined;

  /** The database dialect behind this entity. */
  get dialect(): Dialect {
    return this.#store.dialect;
  }

  /** Number of records. */
  async countRecords(): Promise<number> {
    const rows = await this.#store.query(
      `SELECT COUNT(*) AS n FROM ${tableOf(this.name)}`,
    );
    return Number(rows[0]?.n ?? 0);
  }
  /** True when there are no records. */
  async isEmpty(): Promise<boolean> {
    const rows = await this.#store.query(
      `SELECT 1 AS one FROM ${tableOf(this.name)} LIMIT 1`,
    );
    return rows.length === 0;
  }
  /** True when a record with this id exists. */
  async recordExists(id: string): Promise<boolean> {
    return (await readRow(this.#store, this.#schema, id)) !== undefined;
  }
  /**
   * The first record whose value in any of `columns` equals `value`
   * (e.g. `queryFromCols(identity, ["id", "email"])`), without its password.
   */
  async queryFromCols(
    value: string,
    columns: string[],
  ): Promise<RecordData | undefined> {
    const row = await this.rowFromCols(value, columns);
    return row ? decodeRow(this.#schema, row, this.#store.dialect) : undefined;
  }
  /** Like `queryFromCols`, but the raw stored row (password hash included). Internal use. */
  async rowFromCols(
    value: string,
    columns: string[],
  ): Promise<Record<string, unknown> | undefined> {
    const cols = columns.filter((c) => this.hasField(c));
    if (cols.length === 0) {
      throw new MoonbaseError("invalid", "Cannot query: no such columns");
    }
    const where = cols.map((c) => `${columnOf(c)} = ?`).join(" OR ");
    const sql = `SELECT * FROM ${tableOf(this.name)} WHERE ${where} LIMIT 1`;
    return (await this.#store.query(sql, cols.map(() => value)))[0];
  }

  /**
   * Creates a record: no access rules, or those of `opts.as` (then as the
   * HTTP API would for that caller). Record hooks run either way.
   */
  async create(
    data: Record<string, unknown>,
    opts: LibraryWrite = {},
  ): Promise<RecordData> {
    const { as, ...write } = opts;
    return as
      ? await this.#env.callers.create(this.name, data, as)
      : await this.records.create(data, write);
  }
  /** Lists records; `query` takes the list parameters of the records API. */
  async list(
    query: URLSearchParams | string = "",
    opts: LibraryRead = {},
  ): Promise<ListResult> {
    const q = typeof query === "string" ? new URLSearchParams(query) : query;
    return opts.as
      ? await this.#env.callers.list(this.name, q, opts.as)
      : await this.records.list(q);
  }
  /**
   * Reads a record by id; undefined when it does not exist (with `opts.as`:
   * or the caller may not see it).
   */
  async read(
    id: string,
    opts: LibraryRead = {},
  ): Promise<RecordData | undefined> {
    return opts.as
      ? await this.#env.callers.read(this.name, id, opts.as)
      : await this.records.read(id);
  }
  /**
   * Updates a record; undefined when it does not exist. A new password of an
   * auth entity's user ends the user's sessions, except `opts.keepSession`
   * or, when the caller (`opts.caller`) changes its own, its own session.
   */
  async update(
    id: string,
    data: Record<string, unknown>,
    opts: LibraryWrite = {},
  ): Promise<RecordData | undefined> {
    const { as, ...write } = opts;
    return as
      ? await this.#env.callers.update(this.name, id, data, as)
      : await this.records.update(id, data, write);
  }
  /** Deletes a record; returns the deleted record, or undefined when it did not exist. */
  async remove(
    id: string,
    opts: LibraryWrite = {},
  ): Promise<RecordData | undefined> {
    const { as, ...write } = opts;
    return as
      ? await this.#env.callers.remove(this.name, id, as)
      : await this.records.remove(id, write);
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object") {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
