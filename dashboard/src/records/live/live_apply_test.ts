/**
 * Where live changes land on a page of the records table: in place, faded
 * out, inserted at their place newest first on a page with room, or behind
 * the notice (which says when they are on another page); replays and stale
 * updates change nothing.
 */
import assert from "node:assert/strict";
import type { Page, RecordData } from "../../mb.ts";
import {
  applyChanges,
  type LiveChange,
  type LiveView,
  type Verdict,
  waitingText,
  withoutRows,
} from "./live_apply.ts";

const rec = (id: string, n: number, updated = "2024-01-01T00:00:0" + n) => ({
  id,
  n,
  updated,
});
const page = (ids: string[], has_more = false): Page<RecordData> => ({
  items: ids.map((id, i) => rec(id, i)),
  items_count: ids.length,
  limit: 3,
  has_more,
  cursor: has_more ? "c" : null,
});
const ch = (
  action: LiveChange["action"],
  r: RecordData,
): LiveChange => ({
  action,
  entity: "t",
  id: r.id,
  record: r,
  timestamp: "",
});
const plain: LiveView = { plain: true, newestFirst: true, size: 3, number: 1 };
const all = (): Verdict => "match";
const ids = (p: Page<RecordData>) => p.items.map((r) => r.id);

Deno.test("live_apply: plain view, newest first: insert, update, delete", () => {
  const out = applyChanges(
    page(["c", "a"]),
    [
      ch("create", rec("b", 9)),
      ch("update", rec("a", 5, "2024-02-01")),
      ch("delete", rec("c", 1)),
    ],
    plain,
    all,
    new Map(),
  );
  assert.deepEqual(ids(out.page), ["c", "b", "a"]);
  assert.equal(out.page.items[2].n, 5);
  assert.deepEqual([...out.marks], [["b", "new"], ["a", "changed"], [
    "c",
    "gone",
  ]]);
  assert.equal(out.total, 0);
  assert.deepEqual(ids(withoutRows(out.page, new Set(["c"]))), ["b", "a"]);
  // `created` first, then the id: an older created goes below.
  const byCreated = applyChanges(
    { ...page([]), items: [{ id: "z", created: "2024-02" }] },
    [ch("create", { id: "y", created: "2024-03" })],
    plain,
    all,
    new Map(),
  );
  assert.deepEqual(ids(byCreated.page), ["y", "z"]);
});

Deno.test("live_apply: a full page, another page, a sort: the notice", () => {
  const full = applyChanges(
    page(["c", "b", "a"]),
    [ch("create", rec("d", 1))],
    plain,
    all,
    new Map(),
  );
  assert.deepEqual(ids(full.page), ["c", "b", "a"]);
  assert.deepEqual([...full.waiting], [["d", "new"]]);
  assert.equal(full.total, 1);
  // On page 2, a new record belongs on page 1: the notice says so.
  const first = applyChanges(
    page(["c", "b"]),
    [ch("create", rec("d", 1))],
    { ...plain, number: 2 },
    all,
    new Map(),
  );
  assert.deepEqual(ids(first.page), ["c", "b"]);
  assert.equal(waitingText(first.waiting), "1 new record on page 1");
  // Older than this page's last row, with more pages: a later page.
  const later = applyChanges(
    page(["c", "b"], true),
    [ch("create", rec("a", 1)), ch("create", rec("a0", 1))],
    plain,
    all,
    new Map(),
  );
  assert.equal(later.page.items.length, 2);
  assert.equal(waitingText(later.waiting), "2 new records on later pages");
  assert.equal(later.total, 2);
  const sorted = applyChanges(
    page(["a"]),
    [ch("create", rec("b", 1)), ch("create", rec("c", 1))],
    { ...plain, newestFirst: false },
    all,
    new Map(),
  );
  assert.deepEqual(ids(sorted.page), ["a"]);
  assert.equal(waitingText(sorted.waiting), "2 new records");
  // A waiting record deleted leaves the notice.
  const del = applyChanges(
    sorted.page,
    [ch("delete", rec("b", 1))],
    { ...plain, newestFirst: false },
    all,
    sorted.waiting,
  );
  assert.deepEqual([...del.waiting.keys()], ["c"]);
});

Deno.test("live_apply: filtered view follows the verdicts", () => {
  const view = { ...plain, plain: false };
  const v = (id: string): Verdict =>
    id === "a" ? "nomatch" : id === "x" ? "unknown" : "match";
  const out = applyChanges(
    page(["b", "a"]),
    [
      ch("update", rec("a", 7, "2024-02-01")), // leaves the view
      ch("update", rec("b", 7, "2024-02-01")), // stays, updated
      ch("create", rec("c", 1)), // matches: room on the page
      ch("create", rec("x", 1)), // cannot tell: the notice
      ch("update", rec("y", 1)), // matches, not shown: the notice
    ],
    view,
    v,
    new Map(),
  );
  assert.deepEqual(ids(out.page), ["c", "b", "a"]);
  assert.equal(out.marks.get("a"), "gone");
  assert.equal(out.page.items[2].n, 1, "a gone row keeps its old data");
  assert.equal(out.page.items[1].n, 7);
  assert.equal(waitingText(out.waiting), "1 new record · 1 changed record");
  assert.equal(out.total, null);
});

Deno.test("live_apply: replays and stale updates change nothing", () => {
  const start = page(["a", "b"]);
  const out = applyChanges(
    start,
    [
      ch("create", rec("a", 0)), // already shown, same data
      ch("update", rec("b", 3, "2023-01-01")), // older than shown
      ch("delete", rec("z", 1)), // not shown
    ],
    plain,
    all,
    new Map(),
    new Set(),
  );
  assert.equal(out.page, start);
  assert.equal(out.marks.size, 0);
  // A row fading out stays gone when its create is replayed.
  const fading = applyChanges(
    start,
    [ch("create", rec("a", 0)), ch("update", rec("a", 4, "2025"))],
    plain,
    all,
    new Map(),
    new Set(["a"]),
  );
  assert.equal(fading.page, start);
});
