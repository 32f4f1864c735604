/**
 * Pages of the files tab hold `size` files whatever records they are in:
 * records without files take no room, a record with many files spans pages,
 * and Next starts right after the last file shown.
 */
import assert from "node:assert/strict";
import type { RecordData } from "../mb.ts";
import {
  type FetchBatch,
  fileRows,
  type FileStart,
  loadFilePage,
  withFilesFilter,
} from "./file_pages.ts";

const fields = [
  { name: "cover", type: "file" },
  { name: "att", type: "files" },
];

/** A list API over `records` with numeric cursors (the index reached). */
function lister(records: RecordData[]): { fetch: FetchBatch; calls: number } {
  const out = {
    calls: 0,
    fetch: (after: string | null, limit: number) => {
      out.calls++;
      const from = after === null ? 0 : Number(after);
      const items = records.slice(from, from + limit);
      const end = from + items.length;
      return Promise.resolve({
        items,
        has_more: end < records.length,
        cursor: end < records.length ? String(end) : null,
      });
    },
  };
  return out;
}

const names = (rows: { name: string }[]) => rows.map((r) => r.name);

Deno.test("file_pages: rows in record, field and list order", () => {
  const rows = fileRows([
    { id: "r1", cover: "c1", att: ["a1", "a2"] },
    { id: "r2", cover: null, att: [] },
    { id: "r3", cover: "c3", att: null },
  ], fields);
  assert.deepEqual(rows, [
    { name: "c1", field: "cover", record: "r1" },
    { name: "a1", field: "att", record: "r1" },
    { name: "a2", field: "att", record: "r1" },
    { name: "c3", field: "cover", record: "r3" },
  ]);
  assert.equal(withFilesFilter(fields), "cover != null || att.length > 0");
});

Deno.test("file_pages: pages of files, not of records", async () => {
  // 30 records without files, then one with 7 files, then one with 1.
  const records: RecordData[] = [
    ...Array.from({ length: 30 }, (_, i) => ({ id: `e${i}`, att: [] })),
    { id: "big", cover: "c", att: ["1", "2", "3", "4", "5", "6"] },
    { id: "last", att: ["z"] },
  ];
  const api = lister(records);
  const pages: string[][] = [];
  let start: FileStart | null = { after: null, skip: 0 };
  while (start) {
    const p = await loadFilePage(api.fetch, fields, start, 3);
    pages.push(names(p.rows));
    start = p.next;
  }
  assert.deepEqual(pages, [
    ["c", "1", "2"],
    ["3", "4", "5"],
    ["6", "z"],
  ]);
});

Deno.test("file_pages: a page ending on a batch's last file", async () => {
  const api = lister([
    { id: "a", att: ["1", "2"] },
    { id: "b", att: ["3"] },
    { id: "c", att: ["4"] },
  ]);
  const first = await loadFilePage(api.fetch, fields, {
    after: null,
    skip: 0,
  }, 3);
  assert.deepEqual(names(first.rows), ["1", "2", "3"]);
  assert.ok(first.next);
  const second = await loadFilePage(api.fetch, fields, first.next, 3);
  assert.deepEqual(names(second.rows), ["4"]);
  assert.equal(second.next, null);
});

Deno.test("file_pages: no files at all", async () => {
  const api = lister([{ id: "a", att: [] }]);
  const p = await loadFilePage(api.fetch, fields, { after: null, skip: 0 }, 10);
  assert.deepEqual(p, { rows: [], next: null });
});
