/**
 * The ledger of stored files: a row in the system table `mb_files`
 * (entity id, stored name, when) for every file this database's uploads
 * wrote into the data directory. The row is written before the file is, so
 * every file this database created is in it, even one a crash left behind.
 * Moonbase removes a file only when the ledger of the connected database
 * records it: a file some other database (or a person) put into the data
 * directory is never removed, whatever the directory it is in.
 *
 * @module
 */

import type { Queryable } from "../db/storage.ts";

/** A recorded file. */
export interface LedgerEntry {
  entityId: string;
  name: string;
}

const CHUNK = 500;

/** The `mb_files` rows of one database. */
export class FileLedger {
  readonly #db: Queryable;
  readonly #now: () => number;

  /** `now`: milliseconds since the epoch (the database's clock). */
  constructor(db: Queryable, now: () => number) {
    this.#db = db;
    this.#now = now;
  }

  /** Records a file about to be written (its name is new: a plain insert). */
  async record(entityId: string, name: string): Promise<void> {
    await this.#db.run(
      `INSERT INTO "mb_files" ("entity_id", "name", "created") VALUES (?, ?, ?)`,
      [entityId, name, Math.floor(this.#now())],
    );
  }

  /** Records a file unless it is recorded (two writers of one thumbnail). */
  async ensure(entityId: string, name: string): Promise<void> {
    await this.#db.run(
      `INSERT INTO "mb_files" ("entity_id", "name", "created") VALUES (?, ?, ?) ON CONFLICT ("entity_id", "name") DO NOTHING`,
      [entityId, name, Math.floor(this.#now())],
    );
  }

  /**
   * Records files already on disk that a record of this database references
   * (files written before the ledger existed); recorded ones stay as they are.
   */
  async adopt(entityId: string, names: readonly string[]): Promise<void> {
    for (const name of names) {
      await this.#db.run(
        `INSERT INTO "mb_files" ("entity_id", "name", "created") VALUES (?, ?, ?) ON CONFLICT ("entity_id", "name") DO NOTHING`,
        [entityId, name, Math.floor(this.#now())],
      );
    }
  }

  /** The names among `names` that the ledger records for the entity. */
  async recorded(
    entityId: string,
    names: readonly string[],
  ): Promise<string[]> {
    const out: string[] = [];
    for (let i = 0; i < names.length; i += CHUNK) {
      const part = names.slice(i, i + CHUNK);
      const rows = await this.#db.query(
        `SELECT "name" FROM "mb_files" WHERE "entity_id" = ? AND "name" IN (${
          part.map(() => "?").join(", ")
        })`,
        [entityId, ...part],
      );
      for (const r of rows) out.push(String(r.name));
    }
    return out;
  }

  /**
   * The recorded names derived from `originals` (their thumbnails, and
   * their temporary files): those that start with an original's name and a
   * dot.
   */
  async derivedOf(
    entityId: string,
    originals: readonly string[],
  ): Promise<string[]> {
    const out: string[] = [];
    for (let i = 0; i < originals.length; i += 100) {
      const part = originals.slice(i, i + 100);
      const rows = await this.#db.query(
        `SELECT "name" FROM "mb_files" WHERE "entity_id" = ? AND (${
          part.map(() => `"name" LIKE ? ESCAPE '\\'`).join(" OR ")
        })`,
        [entityId, ...part.map((n) => n.replace(/[\\%_]/g, "\\$&") + ".%")],
      );
      for (const r of rows) out.push(String(r.name));
    }
    return out;
  }

  /** Every recorded name of an entity. */
  async of(entityId: string): Promise<string[]> {
    const rows = await this.#db.query(
      `SELECT "name" FROM "mb_files" WHERE "entity_id" = ? ORDER BY "name"`,
      [entityId],
    );
    return rows.map((r) => String(r.name));
  }

  /** Entity ids with recorded files written at or before `cutoff` (ms). */
  async entities(cutoff: number): Promise<string[]> {
    const rows = await this.#db.query(
      `SELECT DISTINCT "entity_id" FROM "mb_files" WHERE "created" <= ? ORDER BY "entity_id"`,
      [Math.floor(cutoff)],
    );
    return rows.map((r) => String(r.entity_id));
  }

  /** An entity's recorded names written at or before `cutoff` (ms). */
  async olderThan(entityId: string, cutoff: number): Promise<string[]> {
    const rows = await this.#db.query(
      `SELECT "name" FROM "mb_files" WHERE "entity_id" = ? AND "created" <= ? ORDER BY "name"`,
      [entityId, Math.floor(cutoff)],
    );
    return rows.map((r) => String(r.name));
  }

  /** Drops the rows of removed files. */
  async forget(entityId: string, names: readonly string[]): Promise<void> {
    for (let i = 0; i < names.length; i += CHUNK) {
      const part = names.slice(i, i + CHUNK);
      await this.#db.run(
        `DELETE FROM "mb_files" WHERE "entity_id" = ? AND "name" IN (${
          part.map(() => "?").join(", ")
        })`,
        [entityId, ...part],
      );
    }
  }
}
