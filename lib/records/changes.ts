/**
 * Record changes as the realtime layer sees them: every create, update and
 * delete of a non-system entity's record, handed to a `ChangeJournal` inside
 * the write's transaction (so a write that rolls back leaves no change) and
 * announced once the write committed. Records only name the shape; the
 * journal lives in lib/realtime.
 *
 * @module
 */

import type { Queryable, Row, SqlValue } from "../db/storage.ts";
import type { RecordData } from "./codec.ts";

/** What a change did. */
export type ChangeAction = "create" | "update" | "delete";

/** One record's change. */
export interface RecordChange {
  readonly entity: string;
  /** The entity's id: names are reused after a delete or a rename, ids never. */
  readonly entityId: string;
  readonly id: string;
  readonly action: ChangeAction;
  /** The record after the write (delete: as it was). Never the password. */
  readonly record: RecordData;
  /** Update: the record before the write. */
  readonly previous?: RecordData;
}

/** Where changes go (lib/realtime/journal.ts). */
export interface ChangeJournal {
  /**
   * Records a change in the write's transaction `tx`; returns its position
   * (an increasing number), to hand to `committed` after the commit.
   */
  append(tx: Queryable, change: RecordChange): Promise<number>;
  /** The write holding the changes up to `position` committed. */
  committed(position: number): void;
  /**
   * `write` (one INSERT) and the append of its `change` as one statement,
   * its own transaction, returning the position as `id` — only where the
   * database can (PostgreSQL: one round trip instead of five); without it,
   * writes use a transaction and `append`.
   */
  together?(write: SqlStatement, change: RecordChange): SqlStatement;
  /**
   * The append of `change` as a WITH query of the write's own statement,
   * after the write's `"mb_write"` (one append per row of it, none when it
   * wrote nothing), returning the position as `id` — where `together` is.
   */
  appendAfter?(change: RecordChange): SqlStatement;
  /**
   * `write` — an UPDATE or DELETE of one record, `… RETURNING` its columns
   * and its change's bodies as JSON text, built by the database
   * (`BODY_COLUMNS`) — and the append of that change as one statement, its
   * own transaction (PostgreSQL: one round trip where the update would take
   * five). Its rows are the write's, `columns` of them, with the change's
   * position: read it with `returned`. No row: nothing was written, nothing
   * appended.
   */
  togetherReturning?(
    write: SqlStatement,
    head: ChangeHead,
    columns: string,
  ): SqlStatement;
  /** The position of the change a `togetherReturning` row appended. */
  returned?(row: Row): number;
}

/** A change without its bodies (the database builds them: `togetherReturning`). */
export type ChangeHead = Omit<RecordChange, "record" | "previous">;

/**
 * The columns a write handed to `ChangeJournal.togetherReturning` returns
 * the change's bodies in (JSON text; `previous` NULL but on update). No
 * field's column can have these names (field names have no colon).
 */
export const BODY_COLUMNS = {
  record: `"mb:record"`,
  previous: `"mb:previous"`,
} as const;

/** A statement and its parameters. */
export interface SqlStatement {
  readonly sql: string;
  readonly params: readonly SqlValue[];
}

/** A write fused with its change's append: run `statement`, then `done` with its rows. */
export interface FusedWrite {
  readonly statement: SqlStatement;
  done(rows: Row[]): void;
}

/** One write's use of a journal. */
export interface WriteJournal {
  /** In the write's transaction, for every record it changed (`OpOptions.changed`). */
  changed(tx: Queryable, change: RecordChange): Promise<void>;
  /** Once the write committed: announces the changes it appended. */
  committed(): void;
  /** `ChangeJournal.together` for this write, where the journal has it. */
  fuse?: (write: SqlStatement, change: RecordChange) => FusedWrite;
  /**
   * `ChangeJournal.appendAfter` for this write, where the journal has it:
   * `done` takes the statement's rows (the position in `id`, null when
   * nothing was appended).
   */
  fuseAfter?: (change: RecordChange) => FusedWrite;
  /** `ChangeJournal.togetherReturning` for this write, where the journal has it. */
  fuseReturning?: (
    write: SqlStatement,
    head: ChangeHead,
    columns: string,
  ) => FusedWrite;
}

/**
 * A write's journal: `changed` appends and keeps the highest position,
 * `committed` announces it (nothing when the write changed nothing).
 * Undefined when the app keeps no journal.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { writeJournal } from "moonbase/lib/records/changes.ts";
 * const seen: number[] = [];
 * let n = 0;
 * const w = writeJournal({ append: () => Promise.resolve(++n), committed: (p) => seen.push(p) })!;
 * const change = { entity: "e", entityId: "e", id: "1", action: "create" as const, record: {} };
 * await w.changed({} as never, change);
 * await w.changed({} as never, change);
 * w.committed();
 * assert.deepEqual(seen, [2]);
 * assert.equal(writeJournal(undefined), undefined);
 * ```
 */
export function writeJournal(
  journal: ChangeJournal | undefined,
): WriteJournal | undefined {
  if (!journal) return undefined;
  let position = 0;
  const together = journal.together?.bind(journal);
  const after = journal.appendAfter?.bind(journal);
  const returning = journal.togetherReturning?.bind(journal);
  const returned = journal.returned?.bind(journal);
  /** A fused append's rows: its position in `id` (none: nothing appended). */
  const appended = (rows: Row[]) => {
    position = Math.max(position, Number(rows[0]?.id ?? 0));
  };
  return {
    changed: async (tx, change) => {
      position = Math.max(position, await journal.append(tx, change));
    },
    committed: () => {
      if (position > 0) journal.committed(position);
    },
    fuse: together && ((write, change) => ({
      statement: together(write, change),
      done: appended,
    })),
    fuseAfter: after && ((change) => ({
      statement: after(change),
      done: appended,
    })),
    fuseReturning: returning && returned &&
      ((write, head, columns) => ({
        statement: returning(write, head, columns),
        done: (rows) => {
          if (rows[0]) position = Math.max(position, returned(rows[0]));
        },
      })),
  };
}

/**
 * A journal that forwards to one bound later, once: the realtime service
 * writes the journal and reads the registry, and the registry's entities
 * hold the journal, so the app builds the entities' env with this and binds
 * the realtime journal before any write runs (lib/core.ts). Unbound, a
 * change throws (none can be made then: nothing is served yet).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { JournalRelay } from "moonbase/lib/records/changes.ts";
 * const relay = new JournalRelay(false);
 * const seen: number[] = [];
 * relay.bind({ append: () => Promise.resolve(7), committed: (p) => seen.push(p) });
 * assert.equal(await relay.append({} as never, {} as never), 7);
 * relay.committed(7);
 * assert.deepEqual(seen, [7]);
 * assert.throws(() => relay.bind({ append: () => Promise.resolve(1), committed: () => {} }));
 * ```
 */
export class JournalRelay implements ChangeJournal {
  #to: ChangeJournal | undefined;
  /** Set where the database fuses a write with its append (PostgreSQL). */
  readonly together?: (
    write: SqlStatement,
    change: RecordChange,
  ) => SqlStatement;

  /** Set where the database fuses a write with its append (PostgreSQL). */
  readonly togetherReturning?: (
    write: SqlStatement,
    head: ChangeHead,
    columns: string,
  ) => SqlStatement;
  /** Set with `togetherReturning`. */
  readonly returned?: (row: Row) => number;
  /** Set with `together`. */
  readonly appendAfter?: (change: RecordChange) => SqlStatement;

  /**
   * `fuses`: the journal bound will have `together`, `appendAfter`,
   * `togetherReturning` and `returned` (PostgreSQL).
   */
  constructor(fuses: boolean) {
    if (fuses) {
      this.together = (write, change) =>
        this.#fusing().together!(write, change);
      this.togetherReturning = (write, head, columns) =>
        this.#fusing().togetherReturning!(write, head, columns);
      this.returned = (row) => this.#fusing().returned!(row);
      this.appendAfter = (change) => this.#fusing().appendAfter!(change);
    }
  }

  #fusing(): ChangeJournal {
    const to = this.#bound();
    if (
      !to.together || !to.togetherReturning || !to.returned || !to.appendAfter
    ) {
      throw new Error("Cannot fuse a write: the journal bound cannot");
    }
    return to;
  }

  /** Binds the journal changes go to (once). */
  bind(journal: ChangeJournal): void {
    if (this.#to) throw new Error("Cannot bind the journal: bound already");
    this.#to = journal;
  }

  append(tx: Queryable, change: RecordChange): Promise<number> {
    return this.#bound().append(tx, change);
  }

  committed(position: number): void {
    this.#bound().committed(position);
  }

  #bound(): ChangeJournal {
    if (!this.#to) {
      throw new Error("Cannot journal a change: no journal bound yet");
    }
    return this.#to;
  }
}
