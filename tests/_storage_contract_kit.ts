/**
 * What the Storage contract's case tables share: the shape of a case, the
 * context a step gets, and small helpers on fresh tables.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Dialect, Queryable, Storage } from "../lib/db/storage.ts";

export interface OpenedStorage {
  storage: Storage;
  close(): Promise<void>;
}

export type Db = "sqlite" | "postgres";

/** One contract case: a step on a shared storage, in tables of its own. */
export interface Case {
  name: string;
  /** The implementations known to break the case, and how. */
  bug?: Partial<Record<Db, string>>;
  run(c: Ctx): Promise<void>;
}

/** What a step gets: the storage, its dialect, and fresh table names. */
export interface Ctx {
  s: Storage;
  d: Dialect;
  /** A table name no other step uses (`fresh("t")` → `"c12_t"`, quoted). */
  fresh(base: string): string;
}

/** The error `p` rejects with; fails when it resolves. */
export async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  return assert.fail("expected a rejection");
}

/** Creates a table `("id" <int> PRIMARY KEY, <cols>)` and returns its quoted name. */
export async function table(
  c: Ctx,
  cols = `"v" TEXT`,
  base = "t",
): Promise<string> {
  const t = c.fresh(base);
  await c.s.exec(
    `CREATE TABLE ${t} ("id" ${c.d.columnType("int")} PRIMARY KEY, ${cols})`,
  );
  return t;
}

export async function count(q: Queryable, t: string): Promise<number> {
  return (await q.query(`SELECT count(*) AS n FROM ${t}`))[0].n as number;
}

export async function ids(q: Queryable, t: string): Promise<unknown[]> {
  return (await q.query(`SELECT "id" FROM ${t} ORDER BY "id"`)).map((r) =>
    r.id
  );
}
