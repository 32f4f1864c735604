/**
 * The record operations of one entity below any access rule: what the
 * record service runs once a rule became an `Access`, and what `Entity`
 * runs for a program without `{ as }`. Each write validates, hashes a new
 * password, runs the record hooks and the journal around the statement
 * (`WriteSteps`), and once committed ends sessions after a password change,
 * removes the files it orphaned and a deleted user's sign-in rows.
 *
 * Over 350 lines, one idea: the record operations of one entity (with the
 * options they take); kept whole so each write's steps (validate, hooks,
 * journal, statement, after commit) read in one place.
 *
 * @module
 */

import type { Storage } from "../db/storage.ts";
import { invalidFields } from "../errors.ts";
import {
  type CheckedInput,
  checkInput,
  decodeRow,
  type RecordData,
} from "./codec.ts";
import { deleteRecord } from "./delete.ts";
import { insertRecord, readRow, type RefsOf, updateRecord } from "./crud.ts";
import { listRecords, type ListResult, rowScope } from "./list.ts";
import { parseAggregate } from "./aggregate_query.ts";
import {
  aggregateRecords,
  type AggregateResult,
  sqlOnly,
} from "./aggregate.ts";
import { parseListOptions, type SortVia } from "./list_query.ts";
import { type Access, both } from "./caller_access.ts";
import { fileNames, type Uploads } from "./file_values.ts";
import type { CursorContext } from "./list_cursor.ts";
import type { AuthValue } from "../caller.ts";
import { ExpressionRules } from "./rule_engine.ts";
import type { EntitySchema } from "../schema/types.ts";
import type { EntityEnv } from "./entity_env.ts";
import {
  afterCommit,
  PROGRAM,
  type WriteHooks,
  writeHooks,
} from "./entity_hooks.ts";
import { type WriteJournal, writeJournal } from "./changes.ts";
import { current, openScope } from "./write_scope.ts";
import { assertWritable } from "./access.ts";
import type { RuleTarget } from "./rule_types.ts";
import type { Where } from "./list_query.ts";
import {
  PARENT_COLUMN,
  type ReferencingLimits,
  rowsByIds,
  rowsReferencing,
} from "./expand/fetch.ts";

/** Library lists' filters run as an admin would (no script helpers). */
const libraryRules = new ExpressionRules();

/** A read within what a caller may see. */
export interface ReadOptions {
  /** What the caller may see (none: every record). */
  access?: Access;
}

/** A list: `ReadOptions`, and how its cursors are sealed. */
export interface ListAccess extends ReadOptions {
  /** The list `filter` parameter is applied in `access` already. */
  filtered?: boolean;
  /** The caller and key list cursors are sealed with (default: library). */
  cursor?: CursorContext;
  /**
   * The values of the sort keys through relations (`author.name`), as the
   * caller may read them (default: as the program, every record).
   */
  sorts?: ReadonlyMap<string, SortVia>;
  /**
   * `search` is checked in JavaScript after the rule in `access` (a rule
   * checked row by row), not in SQL.
   */
  searchRows?: boolean;
}

/** A create, update or delete. */
export interface WriteOptions extends ReadOptions {
  /** Files uploaded with this write (field → stored names). */
  uploads?: Uploads;
  /**
   * Called once the write's rows are committed (no outer write scope holds
   * them): from then on its uploaded files belong to a committed record,
   * and a failure of the work that follows the commit must not remove them.
   */
  stored?: () => void;
  /**
   * The caller of the write: record hooks see it as `e.auth` (default: the
   * program itself, as admin), and when it changes its own password its own
   * session stays valid (unless `keepSession` names another).
   */
  caller?: AuthValue;
  /** Update of a password: the session (token id) that stays valid. */
  keepSession?: string;
  /**
   * Create: the record's id (a batch's upsert; a lowercase UUID), else a
   * new one.
   */
  id?: string;
  /**
   * Hashes of the passwords in the write, computed ahead (`hashAhead`: a
   * batch hashes before it opens its transaction, which must not wait for
   * a key derivation).
   */
  hashed?: PasswordHashes;
}

/** Password → its stored hash, computed ahead of a write (`hashAhead`). */
export type PasswordHashes = ReadonlyMap<string, string>;

/** The ids a caller may choose (a batch's upsert): UUIDs in lowercase. */
const CHOSEN_ID =
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** One entity's record operations, below any access rule. */
export class EntityRecords {
  readonly #owner: RuleTarget;
  readonly #schema: EntitySchema;
  readonly #base: Storage;
  readonly #refsOf: RefsOf;
  readonly #env: EntityEnv;

  /** `owner`: the entity (its name and type, for errors and filters). */
  constructor(
    owner: RuleTarget,
    schema: EntitySchema,
    store: Storage,
    refsOf: RefsOf,
    env: EntityEnv,
  ) {
    this.#owner = owner;
    this.#schema = schema;
    this.#base = store;
    this.#refsOf = refsOf;
    this.#env = env;
  }

  /** The storage, or inside a before-hook the write it runs in. */
  get #store(): Storage {
    return current(this.#base);
  }

  /** Creates a record within `opts.access`; record hooks run. */
  async create(
    data: Record<string, unknown>,
    opts: WriteOptions = {},
  ): Promise<RecordData> {
    assertWritable(this.#owner, "add");
    if (opts.id !== undefined && !CHOSEN_ID.test(opts.id)) {
      throw invalidFields(
        { id: { code: "invalid", message: "Must be a UUID in lowercase" } },
        `Cannot create record in ${this.#owner.name}: the id is no UUID`,
      );
    }
    // The caller default ("@auth") is set here, before the add rule runs.
    const values = checkInput(this.#schema, data, "create", opts.caller);
    await this.#hash(values, opts.hashed);
    const hooks = this.#hooks("Create", opts.caller, values);
    const journal = this.#journal();
    const rec = await insertRecord(
      this.#store,
      this.#schema,
      values,
      opts.access,
      opts.uploads,
      {
        before: hooks?.before,
        changed: journal?.changed,
        fuse: journal?.fuse,
        fuseAfter: journal?.fuseAfter,
      },
      opts.id,
    );
    if (!openScope(this.#base)) opts.stored?.();
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
    const options = parseListOptions(this.#schema, q);
    let access = opts.access ?? {};
    if (options.filter !== undefined && !opts.filtered) {
      // Library callers: the filter runs as an admin would run it.
      const req = { body: {}, query: Object.fromEntries(q), method: "GET" };
      access = both(
        access,
        await libraryRules.filter(this.#owner, options.filter, PROGRAM, req),
      );
    }
    return await listRecords(
      this.#store,
      this.#schema,
      options,
      access,
      opts.cursor,
      opts.sorts ??
        (options.sort.some((k) => k.field.includes("."))
          ? this.#librarySorts(options.sort)
          : undefined),
      opts.searchRows,
    );
  }

  /** Sort keys through relations as the program reads them (every record). */
  #librarySorts(sort: readonly { field: string }[]): Map<string, SortVia> {
    const out = new Map<string, SortVia>();
    for (const k of sort) {
      if (!k.field.includes(".")) continue;
      const req = { body: {}, query: {}, method: "GET" };
      out.set(
        k.field,
        libraryRules.sortVia(this.#owner, k.field.split("."), PROGRAM, req),
      );
    }
    return out;
  }

  /**
   * Aggregates records (`group`, `count`, `sum`, `avg`, `min`, `max`, and
   * the list's `filter`; lib/records/aggregate.ts) within `opts.access`,
   * which must compile to SQL (400 otherwise).
   */
  async aggregate(
    query: URLSearchParams | string = "",
    opts: ListAccess = {},
  ): Promise<AggregateResult> {
    const q = typeof query === "string" ? new URLSearchParams(query) : query;
    const parsed = parseAggregate(this.#schema, q);
    // The rows are the list's: its parameters, parsed (and refused) as it does.
    const rows = parseListOptions(this.#schema, parsed.rows);
    let access = opts.access ?? {};
    if (rows.filter !== undefined && !opts.filtered) {
      const req = { body: {}, query: Object.fromEntries(q), method: "GET" };
      access = both(
        access,
        await libraryRules.filter(this.#owner, rows.filter, PROGRAM, req),
      );
    }
    return await aggregateRecords(
      this.#store,
      this.#schema,
      parsed,
      rowScope(this.#store.dialect, this.#schema, rows, {
        where: sqlOnly(access),
      }),
    );
  }
  /** Reads a record by id; undefined when it does not exist. */
  async read(
    id: string,
    opts: ReadOptions = {},
  ): Promise<RecordData | undefined> {
    const { where, keep } = opts.access ?? {};
    const store = this.#store;
    const row = await readRow(store, this.#schema, id, where);
    if (!row) return undefined;
    const record = decodeRow(this.#schema, row, store.dialect);
    if (keep && !(await keep(record))) return undefined;
    return record;
  }
  /**
   * The records with these ids that match `where` (expansions: the caller
   * applies its own per-row check), in no particular order.
   */
  async byIds(ids: readonly string[], where?: Where): Promise<RecordData[]> {
    // Looked up once: each look is an AsyncLocalStorage read.
    const store = this.#store, schema = this.#schema;
    const rows = await rowsByIds(store, schema, ids, where);
    return rows.map((r) => decodeRow(schema, r, store.dialect));
  }
  /**
   * The records whose relation `field` holds one of `ids` and that match
   * `where`, each with the id it was found under (a record of a multiple
   * relation once per id its list holds), grouped by that id, oldest first
   * within each (back-relations;
   * see `rowsReferencing` for `limits`).
   */
  async referencing(
    field: string,
    ids: readonly string[],
    where: Where | undefined,
    limits: ReferencingLimits,
  ): Promise<{ parent: string; record: RecordData }[]> {
    const f = this.#schema.fields.find((f) => f.name === field);
    if (!f) return [];
    const store = this.#store, schema = this.#schema;
    const rows = await rowsReferencing(
      store,
      store.dialect,
      schema,
      f,
      ids,
      where,
      limits,
    );
    return rows.map((r) => ({
      parent: String(r[PARENT_COLUMN]),
      record: decodeRow(schema, r, store.dialect),
    }));
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
    assertWritable(this.#owner, "update");
    const values = checkInput(this.#schema, data, "update");
    let newPassword = await this.#hash(values, opts.hashed);
    const hooks = this.#hooks("Update", opts.caller, values);
    const journal = this.#journal();
    const updated = await updateRecord(
      this.#store,
      this.#schema,
      id,
      values,
      opts.access,
      opts.uploads,
      {
        before: hooks?.before,
        changed: journal?.changed,
        fuseReturning: journal?.fuseReturning,
      },
    );
    if (!updated) return undefined;
    if (!openScope(this.#base)) opts.stored?.();
    const { record: rec, removedFiles } = updated;
    newPassword ||= hooks?.passwordSet ?? false;
    await afterCommit(this.#base, hooks, async () => {
      journal?.committed();
      await hooks?.after(rec);
      if (newPassword) {
        // The one place a password change ends the user's other sessions.
        const own = opts.caller?.entity === this.#owner.name &&
          opts.caller.id === id;
        const keep = opts.keepSession ?? (own ? opts.caller?.session : "");
        await this.#env.passwordChanged(this.#owner.name, id, keep ?? "");
      }
      if (newPassword || values.has("email")) {
        await this.#env.credentialsChanged?.(this.#owner.id, id);
      }
      if (removedFiles.length > 0) {
        await this.#env.files?.remove(this.#owner.id, removedFiles);
      }
    });
    return rec;
  }
  /** Deletes a record; returns the deleted record, or undefined when it did not exist. */
  async remove(
    id: string,
    opts: WriteOptions = {},
  ): Promise<RecordData | undefined> {
    assertWritable(this.#owner, "delete");
    const hooks = this.#hooks("Delete", opts.caller, undefined);
    const journal = this.#journal();
    const gone = await deleteRecord(
      this.#store,
      this.#schema,
      id,
      this.#refsOf,
      opts.access,
      {
        before: hooks?.before,
        changed: journal?.changed,
        fuseReturning: journal?.fuseReturning,
      },
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
        if (d.schema.type === "auth") {
          await this.#env.usersRemoved?.(d.schema.id, String(d.record.id));
        }
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
    return this.#schema.is_system ? undefined : writeJournal(this.#env.changes);
  }

  /**
   * Hashes a new password in place (taking the hash from `hashed` when it
   * was computed ahead); true when the write sets one.
   */
  async #hash(
    values: Map<string, unknown>,
    hashed?: PasswordHashes,
  ): Promise<boolean> {
    const pw = values.get("password");
    if (this.#owner.type !== "auth" || typeof pw !== "string") return false;
    values.set("password", hashed?.get(pw) ?? await this.#env.hashPassword(pw));
    return true;
  }

  /**
   * The hash of the password a write's `data` sets, computed now, for the
   * write to take (`WriteOptions.hashed`): a batch hashes before its
   * transaction. Undefined when `data` sets none (or this is no auth
   * entity). The value is checked by the write itself, as ever.
   */
  async hashAhead(
    data: Record<string, unknown>,
  ): Promise<PasswordHashes | undefined> {
    const pw = data.password;
    if (this.#owner.type !== "auth" || typeof pw !== "string") return undefined;
    return new Map([[pw, await this.#env.hashPassword(pw)]]);
  }

  /**
   * Inside a transaction (a batch): whether a record has `id`, with `id`
   * held until the transaction ends, so that two upserts of one id take
   * turns (PostgreSQL: a transaction-level advisory lock on the entity and
   * id; SQLite: the transaction holds the write lock already).
   */
  async claim(id: string): Promise<boolean> {
    const store = this.#store;
    if (store === this.#base) {
      throw new Error("Cannot claim a record id outside a transaction");
    }
    if (store.dialect.name === "postgres") {
      await store.query(
        `SELECT pg_advisory_xact_lock(hashtextextended(?, 0)) AS "held"`,
        [`mb_upsert:${this.#schema.id}:${id}`],
      );
    }
    return (await readRow(store, this.#schema, id)) !== undefined;
  }
}
