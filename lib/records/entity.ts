/**
 * An entity: accessors over its schema plus record
 * operations that bypass access rules (for programs embedding Moonbase).
 *
 * @module
 */

import type { Dialect, Storage } from "../db/storage.ts";
import { MoonbaseError } from "../errors.ts";
import {
  type CheckedInput,
  checkInput,
  decodeRow,
  type RecordData,
} from "./codec.ts";
import { allFields } from "../schema/builtin.ts";
import { deleteRecord } from "./delete.ts";
import { insertRecord, readRow, type RefsOf, updateRecord } from "./crud.ts";
import { listRecords, type ListResult } from "./list.ts";
import { parseListOptions } from "./list_query.ts";
import { type Access, both } from "./caller_access.ts";
import type { Uploads } from "./file_values.ts";
import type { CursorContext } from "./list_cursor.ts";
import type { AuthValue } from "../caller.ts";
import { ExpressionRules } from "./rule_engine.ts";

import { columnOf, tableOf } from "../schema/ddl.ts";
import type {
  EntitySchema,
  EntityType,
  FieldDef,
  Rule,
  Rules,
} from "../schema/types.ts";

import type { CallerAccess, EntityEnv } from "./entity_env.ts";
import {
  afterCommit,
  PROGRAM,
  type WriteHooks,
  writeHooks,
} from "./entity_hooks.ts";
import { fileNames } from "./file_values.ts";
import { type WriteJournal, writeJournal } from "./changes.ts";
import { current } from "./write_scope.ts";
import { assertWritable } from "./access.ts";

const libraryRules = new ExpressionRules();

/** A read: as a caller (`as`, by the entity's rules), or within `access`. */
export interface ReadOptions {
  /** Run as this caller, under the entity's rules, as the HTTP API would. */
  as?: AuthValue;
  /** What the caller may see (none: every record). */
  access?: Access;
}

/** A list: `ReadOptions`, and how its cursors are sealed. */
export interface ListAccess extends ReadOptions {
  /** The list `filter` parameter is applied in `access` already. */
  filtered?: boolean;
  /** The caller and key list cursors are sealed with (default: library). */
  cursor?: CursorContext;
}

/** A create, update or delete. */
export interface WriteOptions extends ReadOptions {
  /** Files uploaded with this write (field → stored names). */
  uploads?: Uploads;
  /**
   * The caller of the write: record hooks see it as `e.auth` (default: the
   * program itself, as admin), and when it changes its own password its own
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
 * const posts = await app.schemas.create({
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
  readonly #refsOf: RefsOf;
  readonly #env: EntityEnv;
  readonly #rules: Readonly<Rules>;
  readonly #fields: FieldDef[];

  /** Wraps a validated schema; use `app.schemas` to create entities. */
  constructor(
    schema: EntitySchema,
    store: Storage,
    refsOf: RefsOf,
    env: EntityEnv,
  ) {
    this.#env = env;
    this.#schema = schema;
    this.#base = store;
    this.#refsOf = refsOf;
    this.#rules = deepFreeze(structuredClone(schema.rules));
    this.#fields = schema.type === "view"
      ? [...schema.fields]
      : allFields(schema);
  }

  /** The storage, or inside a before-hook the write it runs in. */
  get #store(): Storage {
    return current(this.#base);
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
  /** The schema object as the schemas API returns it. */
  get schema(): EntitySchema {
    return { ...structuredClone(this.#schema), fields: this.fields };
  }

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
    opts: WriteOptions = {},
  ): Promise<RecordData> {
    if (opts.as) return await this.#access().create(this.name, data, opts.as);
    assertWritable(this, "add");
    // The caller default ("@auth") is set here, before the add rule runs.
    const values = checkInput(this.#schema, data, "create", opts.caller);
    await this.#hash(values);
    const hooks = this.#hooks("Create", opts.caller, values);
    const journal = this.#journal();
    const rec = await insertRecord(
      this.#store,
      this.#schema,
      values,
      opts.access,
      opts.uploads,
      { before: hooks?.before, changed: journal?.changed, fuse: journal?.fuse },
    );
    await afterCommit(this.#base, hooks, () => {
      journal?.committed();
      return hooks?.after(rec);
    });
    return rec;
  }
  /** Lists records; `query` takes the list parameters of the records API. */
  async list(
    query: URLSearchParams | string = "",
    opts: ListAccess = {},
  ): Promise<ListResult> {
    const q = typeof query === "string" ? new URLSearchParams(query) : query;
    if (opts.as) return await this.#access().list(this.name, q, opts.as);
    const options = parseListOptions(this.#schema, q);
    let access = opts.access ?? {};
    if (options.filter !== undefined && !opts.filtered) {
      // Library callers: the filter runs as an admin would run it.
      const req = { body: {}, query: Object.fromEntries(q), method: "GET" };
      access = both(
        access,
        libraryRules.filter(this, options.filter, PROGRAM, req),
      );
    }
    return await listRecords(
      this.#store,
      this.#schema,
      options,
      access,
      opts.cursor,
    );
  }
  /** Reads a record by id; undefined when it does not exist. */
  async read(
    id: string,
    opts: ReadOptions = {},
  ): Promise<RecordData | undefined> {
    if (opts.as) {
      return await this.#access().get(this.name, id, opts.as).catch((err) => {
        if (err instanceof MoonbaseError && err.code === "not_found") {
          return undefined;
        }
        throw err;
      });
    }
    const { where, keep } = opts.access ?? {};
    const row = await readRow(this.#store, this.#schema, id, where);
    if (!row) return undefined;
    const record = decodeRow(this.#schema, row, this.#store.dialect);
    if (keep && !(await keep(record))) return undefined;
    return record;
  }
  /**
   * Updates a record; undefined when it does not exist. A new password of an
   * auth entity's user ends the user's sessions, except `opts.keepSession`
   * or, when the caller (`opts.caller`) changes its own, its own session.
   */
  async update(
    id: string,
    data: Record<string, unknown>,
    opts: WriteOptions = {},
  ): Promise<RecordData | undefined> {
    if (opts.as) {
      return await this.#access().update(this.name, id, data, opts.as);
    }
    assertWritable(this, "update");
    const values = checkInput(this.#schema, data, "update");
    let newPassword = await this.#hash(values);
    const hooks = this.#hooks("Update", opts.caller, values);
    const journal = this.#journal();
    const updated = await updateRecord(
      this.#store,
      this.#schema,
      id,
      values,
      opts.access,
      opts.uploads,
      { before: hooks?.before, changed: journal?.changed },
    );
    if (!updated) return undefined;
    const { record: rec, removedFiles } = updated;
    newPassword ||= hooks?.passwordSet ?? false;
    await afterCommit(this.#base, hooks, async () => {
      journal?.committed();
      await hooks?.after(rec);
      if (newPassword) {
        // The one place a password change ends the user's other sessions.
        const own = opts.caller?.entity === this.name &&
          opts.caller.id === id;
        const keep = opts.keepSession ?? (own ? opts.caller?.session : "");
        await this.#env.passwordChanged(this.name, id, keep ?? "");
      }
      if (removedFiles.length > 0) {
        await this.#env.files?.remove(this.id, removedFiles);
      }
    });
    return rec;
  }
  /** Deletes a record; returns the deleted record, or undefined when it did not exist. */
  async remove(
    id: string,
    opts: WriteOptions = {},
  ): Promise<RecordData | undefined> {
    if (opts.as) return await this.#access().remove(this.name, id, opts.as);
    assertWritable(this, "delete");
    const hooks = this.#hooks("Delete", opts.caller, undefined);
    const journal = this.#journal();
    const gone = await deleteRecord(
      this.#store,
      this.#schema,
      id,
      this.#refsOf,
      opts.access,
      { before: hooks?.before, changed: journal?.changed },
    );
    if (!gone) return undefined;
    const { record: rec, deleted } = gone;
    await afterCommit(this.#base, hooks, async () => {
      journal?.committed();
      await hooks?.after(rec);
      for (const d of deleted) {
        await this.#env.files?.remove(
          d.schema.id,
          fileNames(d.schema, d.record),
        );
      }
    });
    return rec;
  }

  #hooks(
    op: "Create" | "Update" | "Delete",
    caller: AuthValue | undefined,
    values: CheckedInput | undefined,
  ): WriteHooks | undefined {
    return writeHooks(
      this.#schema,
      this.#env,
      this.#base,
      op,
      caller,
      values,
      (v) => this.#hash(v),
    );
  }

  /** The change journal of one write (none for system entities). */
  #journal(): WriteJournal | undefined {
    return this.isSystem ? undefined : writeJournal(this.#env.changes);
  }

  #access(): CallerAccess {
    if (!this.#env.access) {
      throw new MoonbaseError(
        "unavailable",
        `Cannot act as a caller on ${this.name}: no record service`,
      );
    }
    return this.#env.access;
  }

  /** Hashes a new password in place; true when the write sets one. */
  async #hash(values: Map<string, unknown>): Promise<boolean> {
    const pw = values.get("password");
    if (this.type !== "auth" || typeof pw !== "string") return false;
    values.set("password", await this.#env.hashPassword(pw));
    return true;
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object") {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
