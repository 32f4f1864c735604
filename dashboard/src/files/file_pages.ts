/**
 * Pages of files for the files tab: a page holds `size` files, however
 * they are spread over records (one record may fill several pages, a page
 * may span many records). Records are read through the list API in keyset
 * batches, filtered to those that hold a file, newest first; a page starts
 * at a record cursor plus a number of files to skip in that batch, so
 * Next/Previous work like the records table's cursors. Pure apart from the
 * `fetch` handed in: unit-tested in `file_pages_test.ts`.
 *
 * @module
 */

import type { RecordData } from "../mb.ts";

/** A file field, as far as the paging cares. */
export interface FileField {
  name: string;
  type: string;
}

/** One file shown: its stored name, field and owning record. */
export interface FileRow {
  name: string;
  field: string;
  record: string;
}

/** Where a page starts: after a record cursor, skipping files of that batch. */
export interface FileStart {
  after: string | null;
  skip: number;
}

/** One list answer, as far as the paging cares. */
export interface RecordBatch {
  items: RecordData[];
  cursor: string | null;
  has_more: boolean;
}

/** Reads `limit` records after `after` (null: from the start). */
export type FetchBatch = (
  after: string | null,
  limit: number,
) => Promise<RecordBatch>;

/** A page of files and where the next one starts (null: none). */
export interface FilePage {
  rows: FileRow[];
  next: FileStart | null;
}

/** The files of records, in record order, then field order, then list order. */
export function fileRows(
  records: readonly RecordData[],
  fields: readonly FileField[],
): FileRow[] {
  const rows: FileRow[] = [];
  for (const r of records) {
    for (const f of fields) {
      const v = r[f.name];
      const names = Array.isArray(v) ? v.map(String) : v ? [String(v)] : [];
      for (const name of names) {
        rows.push({ name, field: f.name, record: r.id });
      }
    }
  }
  return rows;
}

/**
 * The filter that keeps records holding at least one file
 * (`cover != null || attachments.length > 0`).
 */
export function withFilesFilter(fields: readonly FileField[]): string {
  return fields.map((f) =>
    f.type === "files" ? `${f.name}.length > 0` : `${f.name} != null`
  ).join(" || ");
}

/**
 * Reads the page of `size` files that starts at `start`, fetching batches
 * of `size` records until the page is full or the records end.
 */
export async function loadFilePage(
  fetch: FetchBatch,
  fields: readonly FileField[],
  start: FileStart,
  size: number,
): Promise<FilePage> {
  const rows: FileRow[] = [];
  let after = start.after, skip = start.skip;
  while (true) {
    const batch = await fetch(after, size);
    const all = fileRows(batch.items, fields);
    const take = all.slice(skip, skip + size - rows.length);
    rows.push(...take);
    const used = skip + take.length;
    const more = batch.has_more && batch.cursor !== null;
    if (rows.length >= size) {
      if (used < all.length) return { rows, next: { after, skip: used } };
      return { rows, next: more ? { after: batch.cursor, skip: 0 } : null };
    }
    if (!more) return { rows, next: null };
    after = batch.cursor;
    skip = 0;
  }
}
