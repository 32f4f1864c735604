/**
 * The records table's default order (newest first), the header clicks
 * around it, and the filter example built from the entity's own fields.
 */
import assert from "node:assert/strict";
import {
  apiSort,
  defaultSort,
  filterExample,
  listQuery,
  nextSort,
  shownSort,
  summaryFields,
  summaryQuery,
  type TableState,
} from "./records_query.ts";
import type { EntitySchema, FieldDef } from "../schemas.ts";

const field = (name: string, type: FieldDef["type"], system = false) =>
  ({ name, type, system }) as FieldDef;

const schemaOf = (fields: FieldDef[]) =>
  ({ name: "t", type: "base", fields }) as unknown as EntitySchema;

const base = schemaOf([
  field("id", "string", true),
  field("headline", "string"),
  field("n", "int"),
  field("created", "date", true),
]);
const state: TableState = { filter: "", q: "", sort: "", size: 25 };

Deno.test("records_query: newest first by default, where there is created", () => {
  assert.equal(defaultSort(base), "-created");
  assert.equal(apiSort(base, state), "-created,-id");
  assert.equal(apiSort(base, { ...state, sort: "n" }), "n");
  const view = schemaOf([field("id", "string"), field("total", "int")]);
  assert.equal(defaultSort(view), "");
  assert.equal(apiSort(view, state), undefined);
});

Deno.test("records_query: header clicks cycle around the default", () => {
  // Another column: asc → desc → the default ("").
  assert.equal(nextSort("", "n", "-created"), "n");
  assert.equal(nextSort("n", "n", "-created"), "-n");
  assert.equal(nextSort("-n", "n", "-created"), "");
  // The default's own column: ascending, then the default again.
  assert.equal(nextSort("", "created", "-created"), "created");
  assert.equal(nextSort("created", "created", "-created"), "");
  // Without a default: asc → desc → off.
  assert.equal(nextSort("", "n"), "n");
  assert.equal(nextSort("-n", "n"), "");
});

Deno.test("records_query: the filter example uses the entity's fields", () => {
  assert.equal(filterExample(base), 'n >= 10 && headline.startsWith("A")');
  const flags = schemaOf([field("done", "bool"), field("data", "json")]);
  assert.equal(filterExample(flags), "done == true");
  const bare = schemaOf([field("created", "date", true)]);
  assert.equal(filterExample(bare), 'created >= "2024-01-01"');
});

Deno.test("records_query: the summary counts the table's rows by a select, bool or relation", () => {
  const s = schemaOf([
    field("id", "string", true),
    field("title", "string"),
    field("status", "select"),
    field("done", "bool"),
    field("owner", "relation"),
    field("verified", "bool", true),
    field("n", "int"),
  ]);
  assert.deepEqual(summaryFields(s).map((f) => f.name), [
    "status",
    "done",
    "owner",
    "verified",
  ]);
  assert.deepEqual(
    summaryQuery(s, { ...state, filter: "n > 1", sort: "n", size: 50 }, "done"),
    { filter: "n > 1", group: "done", count: true },
  );
  const q = summaryQuery(s, { ...state, q: "x" }, "status");
  assert.equal(q.group, "status");
  assert.equal("limit" in q, false);
  assert.ok(
    String(q.filter ?? q.search ?? "").includes("x"),
    "the search applies",
  );
});

Deno.test("records_query: a page asks for the shown columns' expand; the summary never does", () => {
  const s = { ...state, filter: "n > 1" };
  assert.equal("expand" in listQuery(base, s, null), false);
  assert.equal(
    listQuery(base, s, null, false, "author.team,tags").expand,
    "author.team,tags",
  );
  assert.equal("expand" in summaryQuery(base, s, "n"), false);
});

Deno.test("records_query: the quick search folds case and accents, or uses search", () => {
  const plain = listQuery(base, { ...state, q: "Émile" }, null);
  assert.equal(
    plain.filter,
    'fold(id).includes(fold("Émile")) || fold(headline).includes(fold("Émile"))',
  );
  assert.equal(plain.search, undefined);
  assert.equal(plain.sort, "-created,-id");
  const searchable = schemaOf([
    field("id", "string", true),
    { ...field("headline", "string"), searchable: true },
    field("created", "date", true),
  ]);
  const q = { ...state, q: " Émile zo ", filter: "n > 1" };
  const s = listQuery(searchable, q, null);
  assert.deepEqual([s.filter, s.search, s.sort], [
    "n > 1",
    "Émile zo",
    undefined,
  ]);
  assert.equal(shownSort(searchable, q), "", "by relevance");
  assert.equal(listQuery(searchable, { ...q, sort: "n" }, null).sort, "n");
  // No word to look for: the text is searched as text.
  const dash = listQuery(searchable, { ...state, q: "-" }, null);
  assert.equal(dash.search, undefined);
  assert.match(
    String(dash.filter),
    /fold\(headline\)\.includes\(fold\("-"\)\)/,
  );
});
