/**
 * Record reads and writes on one entity's table, below any access rule.
 * What the caller may touch arrives as an `Access` (an extra `Where`, a
 * per-row `keep`, a `check` on the record as it would be stored); what the
 * entity runs around the statement as `WriteSteps`; what a write produced is
 * returned.
 *
 * Just over 350 lines, one idea: the statements of record reads and writes
 * below any rule; split further it would scatter one write's SQL.
 *
 * @module
 */

import type { Queryable, Row, SqlValue, Storage } from "../db/storage.ts";
import { columnOf, tableOf } from "../schema/ddl.ts";
import type { EntitySchema, FieldDef } from "../schema/types.ts";
import { uuidv7 } from "../ids.ts";
import { mergeFiles, type Uploads } from "./file_values.ts";
import {
  type CheckedInput,
  decodeRow,
  encodeValues,
  type RecordData,
} from "./codec.ts";
import { allFields } from "../schema/builtin.ts";
import type { Where } from "./list_query.ts";
import type { Access } from "./caller_access.ts";
import type { FusedWrite, RecordChange, SqlStatement } from "./changes.ts";
import { updateStatement } from "./update_sql.ts";
import { fusedUpdate, type FuseReturning } from "./fused_writes.ts";
import {
  checkRelations,
  constraintError,
  hasRelationValue,
  relationTargets,
} from "./constraints.ts";
import {
  checkedInsert,
  insertHead,
  insertWhere,
  NEW_ROW,
} from "./checked_insert.ts";

/**
 * What an entity runs in a write's transaction around the statement itself
 * (from its record hooks and its change journal: fixed when the entity was
 * built, so the same for every write of it).
 */
export interface WriteSteps {
  /**
   * Runs in the write's transaction before the check and the write, with the
   * record as it would be stored (and, on update and delete, as it was);
   * may return checked values that replace the write's own (record hooks).
   */
  before?: (
    record: RecordData,
    tx: Queryable,
    previous?: RecordData,
  ) => Promise<CheckedInput | undefined>;
  /**
   * Called in the write's transaction for every record the write changed
   * (cascades and `set null` included), after its statement ran. Set, it
   * takes every write through a transaction.
   */
  changed?: (tx: Queryable, change: RecordChange) => Promise<void>;
  /**
   * With `changed`, where the journal can (PostgreSQL): a create with
   * nothing to read first makes its INSERT and the append of its change
   * one statement instead of a transaction.
   */
  fuse?: (write: SqlStatement, change: RecordChange) => FusedWrite;
  /**
   * With `changed`, where the journal can (PostgreSQL): the append of a
   * create's change in the create's own statement, after its INSERT
   * (`ChangeJournal.appendAfter`; lib/records/checked_insert.ts).
   */
  fuseAfter?: (change: RecordChange) => FusedWrite;
  /**
   * With `changed`, where the journal can (PostgreSQL): an update or a
   * delete with nothing to read or check first is one statement with the
   * append of its change (lib/records/fused_writes.ts).
   */
  fuseReturning?: FuseReturning;
}

/** What an update produced. */
export interface Updated {
  /** The record as stored. */
  record: RecordData;
  /** Stored file names the record no longer references. */
  removedFiles: string[];
}

/** A relation field of some entity that points at another entity. */
export interface RelationRef {
  schema: EntitySchema;
  field: FieldDef;
}

/** Finds the relation fields that point at an entity (by name). */
export type RefsOf = (entity: string) => RelationRef[];

const selects = new WeakMap<EntitySchema, string>();

/** The column list of an entity's SELECTs (cached per schema object). */
export function selectList(schema: EntitySchema): string {
  let s = selects.get(schema);
  if (s === undefined) {
    s = schema.type === "view"
      ? "*"
      : allFields(schema).map((f) => columnOf(f.name)).join(", ");
    selects.set(schema, s);
  }
  return s;
}

const byIds = new WeakMap<EntitySchema, string>();

function selectById(schema: EntitySchema): string {
  let s = byIds.get(schema);
  if (s === undefined) {
    s = `SELECT ${selectList(schema)} FROM ${
      tableOf(schema.name)
    } WHERE "id" = ?`;
    byIds.set(schema, s);
  }
  return s;
}

function and(base: string, where?: Where): string {
  return where ? `${base} AND (${where.sql})` : base;
}

/** Reads a stored row by id (password included: callers decode). */
export async function readRow(
  db: Queryable,
  schema: EntitySchema,
  id: string,
  where?: Where,
  lock = false,
): Promise<Row | undefined> {
  if (!where && !lock) return (await db.query(selectById(schema), [id]))[0];
  const sql = and(selectById(schema), where);
  const rows = await db.query(lock ? `${sql} FOR UPDATE` : sql, [
    id,
    ...(where?.params ?? []),
  ]);
  return rows[0];
}

/**
 * Inserts a record from checked (and password-hashed) values, with the
 * files uploaded with it (field → stored names), under a new id unless
 * `id` names one (a batch's upsert).
 */
export async function insertRecord(
  store: Storage,
  schema: EntitySchema,
  values: CheckedInput,
  access: Access = {},
  uploads: Uploads = new Map(),
  steps: WriteSteps = {},
  id: string = uuidv7(),
): Promise<RecordData> {
  const now = new Date().toISOString();
  if (hasFiles(schema)) mergeFiles(schema, undefined, values, uploads);
  const columns = (v: CheckedInput) =>
    encodeValues(
      schema,
      new Map([["id", id], ["created", now], ["updated", now], ...v]),
      store.dialect,
    );
  const insert = (cols: Map<string, SqlValue>) =>
    `${insertHead(schema, cols)} VALUES (${
      [...cols.keys()].map(() => "?").join(", ")
    })`;
  const { check } = access;
  const { before, changed } = steps;
  // A journal that can append in the INSERT itself (PostgreSQL).
  const fuse = changed ? steps.fuse : undefined;
  try {
    if (
      !check && !before && !hasRelationValue(schema, values) &&
      (!changed || fuse)
    ) {
      // Nothing to read first: one INSERT is atomic on its own (one round
      // trip on PostgreSQL, no transaction lock on SQLite), and so is one
      // that appends its change too.
      const cols = columns(values);
      const record = decodeRow(schema, Object.fromEntries(cols), store.dialect);
      const write = { sql: insert(cols), params: [...cols.values()] };
      if (!fuse) {
        await store.run(write.sql, write.params);
        return record;
      }
      const fused = fuse(write, {
        entity: schema.name,
        entityId: schema.id,
        id,
        action: "create",
        record,
      });
      if (store.pipeline) {
        // In a batch: nothing of this write waits for the answer, so the
        // batch's next statements go out with it (`Storage.pipeline`).
        store.pipeline(fused.statement.sql, fused.statement.params, {
          done: (rows) => fused.done(rows),
          failed: (err) => constraintError(store, schema, err),
        });
        return record;
      }
      fused.done(
        await store.query(fused.statement.sql, fused.statement.params),
      );
      return record;
    }
    // The rule in the INSERT itself where it has an exact SQL form and no
    // hook changes the record first (lib/records/checked_insert.ts).
    const rule = before ? undefined : access.checkSql;
    const after = changed ? steps.fuseAfter : undefined;
    if (rule && store.dialect.name === "postgres" && (!changed || after)) {
      // One statement: relations locked, the rule, the INSERT, its change.
      const cols = columns(values);
      const record = decodeRow(schema, Object.fromEntries(cols), store.dialect);
      const one = checkedInsert(
        store,
        schema,
        cols,
        rule,
        relationTargets(schema, values),
        after &&
          (() =>
            after({
              entity: schema.name,
              entityId: schema.id,
              id,
              action: "create",
              record,
            })),
      );
      // Not decided (a related record changed while locked): the checks
      // one step at a time below.
      if (
        one &&
        one.decide(await store.query(one.statement.sql, one.statement.params))
      ) return record;
    }
    return await writeTransaction(store, !before, async (tx) => {
      let cols = columns(values);
      let record = decodeRow(schema, Object.fromEntries(cols), store.dialect);
      // The rule first (hooks run only for writes it allows), and again
      // below on the record as the hooks left it.
      if (before) await check?.(record, tx);
      const hooked = await before?.(record, tx);
      if (hooked) {
        values = hooked;
        cols = columns(values);
        record = decodeRow(schema, Object.fromEntries(cols), store.dialect);
      }
      if (hasRelationValue(schema, values)) {
        await checkRelations(tx, store.dialect.name, schema, values);
      }
      const where = rule?.where(NEW_ROW);
      if (where) {
        // The rule checked by the INSERT: no related record read here.
        if (!(await insertWhere(tx, store, schema, cols, where))) {
          rule!.refuse();
        }
      } else {
        if (check) await check(record, tx);
        await tx.run(insert(cols), [...cols.values()]);
      }
      await changed?.(tx, {
        entity: schema.name,
        entityId: schema.id,
        id,
        action: "create",
        record,
      });
      return record;
    });
  } catch (err) {
    throw constraintError(store, schema, err);
  }
}

/**
 * Updates a record, with the files uploaded with the write; undefined when
 * it does not exist or `access` hides it.
 */
export async function updateRecord(
  store: Storage,
  schema: EntitySchema,
  id: string,
  values: CheckedInput,
  access: Access = {},
  uploads: Uploads = new Map(),
  steps: WriteSteps = {},
): Promise<Updated | undefined> {
  const dialect = store.dialect;
  const lock = dialect.name === "postgres";
  const files = hasFiles(schema);
  const { where, keep, check } = access;
  const { before, changed } = steps;
  try {
    if (
      !keep && !check && !before && !changed && !files &&
      !hasRelationValue(schema, values)
    ) {
      // Nothing to read or check first: one UPDATE … RETURNING is atomic on
      // its own (one round trip on PostgreSQL, no transaction on SQLite).
      const u = updateStatement(schema, values, dialect);
      const rows = await store.query(
        and(u.sql, where) + ` RETURNING ${selectList(schema)}`,
        [...u.params, id, ...(where?.params ?? [])],
      );
      return rows[0] &&
        { record: decodeRow(schema, rows[0], dialect), removedFiles: [] };
    }
    const fuse = changed ? steps.fuseReturning : undefined;
    if (
      fuse && !keep && !check && !before && !files &&
      !hasRelationValue(schema, values)
    ) {
      // The same with its change appended, in one statement (PostgreSQL).
      const u = updateStatement(schema, values, dialect);
      const out = await fusedUpdate(
        store,
        schema,
        selectList(schema),
        id,
        u,
        where,
        fuse,
      );
      if (out.fused) {
        return out.row &&
          { record: decodeRow(schema, out.row, dialect), removedFiles: [] };
      }
    }
    const write = async (tx: Queryable): Promise<Updated | undefined> => {
      const current = await readRow(tx, schema, id, where, lock);
      if (!current) return undefined;
      const previous = decodeRow(schema, current, dialect);
      if (keep && !(await keep(previous, tx))) return undefined;
      const removedFiles = files
        ? mergeFiles(schema, previous, values, uploads)
        : [];
      let u = updateStatement(schema, values, dialect);
      let next = decodeRow(schema, {
        ...current,
        ...Object.fromEntries(u.columns),
      }, dialect);
      if (before) {
        await check?.(next, tx);
        const hooked = await before(next, tx, previous);
        if (hooked) {
          values = hooked;
          u = updateStatement(schema, values, dialect);
          next = decodeRow(schema, {
            ...current,
            ...Object.fromEntries(u.columns),
          }, dialect);
        }
      }
      if (hasRelationValue(schema, values)) {
        await checkRelations(tx, dialect.name, schema, values);
      }
      if (check) await check(next, tx);
      u.params.push(id);
      await tx.run(u.sql, u.params);
      await changed?.(tx, {
        entity: schema.name,
        entityId: schema.id,
        id,
        action: "update",
        record: next,
        previous,
      });
      return { record: next, removedFiles };
    };
    return await writeTransaction(store, !before, write);
  } catch (err) {
    throw constraintError(store, schema, err);
  }
}

/**
 * Runs a record write's transaction. `lean`: every statement before the
 * write's own statement only reads, and after it only its change is
 * appended (no before-hook writes in between): on SQLite it then needs no
 * savepoint of its own in the write group (`Storage.leanTransaction`).
 */
function writeTransaction<T>(
  store: Storage,
  lean: boolean,
  fn: (tx: Queryable) => Promise<T>,
): Promise<T> {
  return lean && store.leanTransaction
    ? store.leanTransaction(fn)
    : store.transaction(fn);
}

/** True when the entity has file fields. */
export function hasFiles(schema: EntitySchema): boolean {
  return schema.fields.some((f) => f.type === "file" || f.type === "files");
}
