/**
 * Reads of records by id that concurrent callers share (PostgreSQL): the
 * user behind every bearer token is read for each request, so that a
 * deleted user's token is refused at once; under load those reads were one
 * statement per request, a round trip and ~30 µs of the server's CPU each.
 *
 * Each read is still sent after its caller asked: while a read of the
 * entity is out, callers join the next one, sent once it settles, which
 * reads every id they asked for in one statement. A caller therefore sees
 * every change committed before it called (a deleted user, a changed
 * field), as with a statement of its own. Nothing is kept after the answer:
 * this is no cache.
 *
 * A read out longer than `OUT_WAIT_MS` holds no one else up: the next is
 * sent then. Its statement may sit behind a slow one on its connection (or a
 * stalled connection) while the pool's others are free; waiting for it would
 * hold every caller of the entity as long, up to the statement timeout, or
 * for ever.
 *
 * @module
 */

import type { Row, Storage } from "../db/storage.ts";
import type { EntitySchema } from "../schema/types.ts";
import { tableOf } from "../schema/ddl.ts";
import { readRow, selectList } from "./crud.ts";
import { decodeRow, type RecordData } from "./codec.ts";
import type { Entity } from "./entity.ts";
import { openScope } from "./write_scope.ts";

/**
 * How long callers wait for the read out before theirs is sent anyway: far
 * above a round trip, far below the statement timeout.
 */
export const OUT_WAIT_MS = 50;

/** The ids callers asked for while a read was out, and their shared answer. */
interface NextRead {
  ids: Set<string>;
  rows: Promise<Map<string, Row>>;
}

/** One entity's reads (by its schema: a changed schema reads on its own). */
class EntityReads {
  #store: Storage;
  #schema: EntitySchema;
  /** The read sent and not yet settled. */
  #out: Promise<unknown> | undefined;
  /** The read callers wait for meanwhile, sent when `#out` settles. */
  #next: NextRead | undefined;

  constructor(store: Storage, schema: EntitySchema) {
    this.#store = store;
    this.#schema = schema;
  }

  read(id: string): Promise<Row | undefined> {
    if (!this.#out) {
      // Nothing out: sent now, the statement a lone read always was.
      const row = readRow(this.#store, this.#schema, id);
      this.#markOut(row);
      return row;
    }
    let next = this.#next;
    if (!next) {
      const ids = new Set<string>();
      const rows = settledOrLate(this.#out).then(() => this.#send(ids));
      next = this.#next = { ids, rows };
    }
    next.ids.add(id);
    return next.rows.then((rows) => rows.get(id));
  }

  #send(ids: Set<string>): Promise<Map<string, Row>> {
    this.#next = undefined;
    const rows = ids.size === 1
      ? readRow(this.#store, this.#schema, [...ids][0]).then((row) =>
        new Map(row ? [[String(row.id), row]] : [])
      )
      : this.#store.query(byIdsSql(this.#schema), [JSON.stringify([...ids])])
        .then((rows) => new Map(rows.map((r) => [String(r.id), r])));
    this.#markOut(rows);
    return rows;
  }

  /** Marks `read` as the one out until it settles. */
  #markOut(read: Promise<unknown>): void {
    const out: Promise<unknown> = read.then(
      () => {},
      // Its callers get the failure; here it only ends the read.
      () => {},
    ).finally(() => {
      if (this.#out === out) this.#out = undefined;
    });
    this.#out = out;
  }
}

/**
 * Resolves when `out` settles or after `OUT_WAIT_MS`, whichever is first.
 * `out` never rejects: a failed read failed for its own callers.
 */
function settledOrLate(out: Promise<unknown>): Promise<void> {
  return new Promise((resolve) => {
    const late = setTimeout(resolve, OUT_WAIT_MS);
    out.then(() => {
      clearTimeout(late);
      resolve();
    });
  });
}

const byIdsTexts = new WeakMap<EntitySchema, string>();

/**
 * One statement text for any number of ids (a JSON array): one prepared
 * statement, not one per count; `= ANY` keeps the primary key's index. The
 * parameter is text (as `json`, postgres.js would encode the string again).
 */
function byIdsSql(schema: EntitySchema): string {
  let s = byIdsTexts.get(schema);
  if (s === undefined) {
    s = `SELECT ${selectList(schema)} FROM ${
      tableOf(schema.name)
    } WHERE "id" = ANY(ARRAY(SELECT json_array_elements_text(?::text::json)))`;
    byIdsTexts.set(schema, s);
  }
  return s;
}

/**
 * Records read by id, concurrent reads sharing statements on PostgreSQL
 * (see the module's text); elsewhere, and inside a write's scope (whose
 * transaction a read must see), each read is the entity's own.
 */
export class SharedReads {
  #store: Storage;
  #reads = new WeakMap<EntitySchema, EntityReads>();

  /** Reads shared on `store` (the storage the entities were opened on). */
  constructor(store: Storage) {
    this.#store = store;
  }

  /** The record `id` of `entity` as stored when this was called, if any. */
  async read(entity: Entity, id: string): Promise<RecordData | undefined> {
    const store = this.#store;
    if (store.dialect.name !== "postgres" || openScope(store)) {
      return await entity.read(id);
    }
    const schema = entity.shape;
    let reads = this.#reads.get(schema);
    if (!reads) this.#reads.set(schema, reads = new EntityReads(store, schema));
    const row = await reads.read(id);
    return row && decodeRow(schema, row, store.dialect);
  }
}
