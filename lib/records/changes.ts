/**
 * Record changes as the realtime layer sees them: every create, update and
 * delete of a non-system entity's record, handed to a `ChangeJournal` inside
 * the write's transaction (so a write that rolls back leaves no change) and
 * announced once the write committed. Records only name the shape; the
 * journal lives in lib/realtime.
 *
 * @module
 */

import type { Queryable } from "../db/storage.ts";
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
}
