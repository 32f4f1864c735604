import assert from "node:assert/strict";
import { MoonbaseError } from "../errors.ts";
import type { SqlValue } from "../db/storage.ts";
import {
  callerOf,
  cursorKeyOf,
  type CursorQuery,
  openCursor,
  positionDigest,
  sealCursor,
} from "./list_cursor.ts";
import { cursorOf, orderKeys } from "./list_query.ts";

const ctx = { key: cursorKeyOf("secret"), caller: "user\0users\0u1" };
const query: CursorQuery = {
  entityId: "e1",
  keys: orderKeys([{ field: "title", desc: false }]),
  kinds: ["text", "text"],
};

function refused(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof MoonbaseError);
    assert.equal(e.code, "invalid");
    assert.match(e.message, pattern);
    return true;
  });
}

Deno.test("list_cursor: a sealed cursor opens on its own query only", () => {
  const c = sealCursor(ctx, query, { values: ["été 🌙", "id1"], skip: 0 });
  assert.match(c, /^[A-Za-z0-9_-]+$/, "URL-safe");
  assert.ok(!c.includes("id1"));
  assert.deepEqual(openCursor(ctx, query, c), {
    values: ["été 🌙", "id1"],
    skip: 0,
  });
  const other = /belongs to another query/;
  refused(() => openCursor({ ...ctx, caller: "guest" }, query, c), other);
  refused(() => openCursor(ctx, { ...query, entityId: "e2" }, c), other);
  refused(() => openCursor(ctx, { ...query, filter: "x > 1" }, c), other);
  const desc = orderKeys([{ field: "title", desc: true }]);
  refused(() => openCursor(ctx, { ...query, keys: desc }, c), other);
  // Another instance secret: not a cursor at all.
  const foreign = { ...ctx, key: cursorKeyOf("other") };
  refused(() => openCursor(foreign, query, c), /not a cursor from this list/);
});

Deno.test("list_cursor: garbled or altered cursors are 400s", () => {
  const c = sealCursor(ctx, query, { values: ["a", "b"], skip: 3 });
  const flipped = c[20] === "A" ? "B" : "A";
  for (
    const bad of [
      "",
      "%%%",
      "notacursor",
      "W10",
      c.slice(0, -2),
      c.slice(0, 20) + flipped + c.slice(21),
      btoa(JSON.stringify(["a", "b"])),
      "x".repeat(9000),
    ]
  ) {
    refused(() => openCursor(ctx, query, bad), /Cannot use cursor/);
  }
});

Deno.test("list_cursor: values must fit the sort columns", () => {
  const ints: CursorQuery = { ...query, kinds: ["int", "text"] };
  const wrong = sealCursor(ctx, ints, { values: ["x", "id"], skip: 0 });
  refused(() => openCursor(ctx, ints, wrong), /do not fit/);
  const short = sealCursor(ctx, ints, { values: ["id"], skip: 0 });
  refused(() => openCursor(ctx, ints, short), /do not fit/);
  const obj = sealCursor(ctx, ints, {
    values: [{ a: 1 } as unknown as SqlValue, "id"],
    skip: 0,
  });
  refused(() => openCursor(ctx, ints, obj), /do not fit/);
  const ok = sealCursor(ctx, ints, { values: [null, "id"], skip: 0 });
  assert.deepEqual(openCursor(ctx, ints, ok).values, [null, "id"]);
  // No values: the start of the list, moved on by skip rows.
  const start = sealCursor(ctx, ints, { skip: 5000 });
  assert.deepEqual(openCursor(ctx, ints, start), { skip: 5000 });
});

Deno.test("list_cursor: callers and keyset values", () => {
  assert.equal(callerOf({ type: "guest", entity: "", id: "" }), "guest");
  assert.notEqual(
    callerOf({ type: "user", entity: "a", id: "1" }),
    callerOf({ type: "admin", entity: "a", id: "1" }),
  );
  const keys = orderKeys([{ field: "n", desc: false }]);
  assert.deepEqual(cursorOf(keys, { n: "12", id: "x" }, ["int", "text"]), [
    12,
    "x",
  ]);
  assert.deepEqual(cursorOf(keys, { n: 5n, id: "x" }), [5, "x"]);
});

Deno.test("list_cursor: a position seals once; kept cursors stay checked", () => {
  const pos = { values: ["b", "id2"], skip: 0 };
  const c = sealCursor(ctx, query, pos);
  // The same position of the same query: the same text.
  assert.equal(sealCursor(ctx, query, pos), c);
  // Another caller, key or position: another text.
  assert.notEqual(sealCursor({ ...ctx, caller: "guest" }, query, pos), c);
  const key2 = { ...ctx, key: cursorKeyOf("other") };
  assert.notEqual(sealCursor(key2, query, pos), c);
  assert.notEqual(sealCursor(ctx, query, { ...pos, skip: 1 }), c);
  // Opened twice (the second time from what was kept): the same answer, a
  // copy the caller may change, and the query and caller still checked.
  const first = openCursor(ctx, query, c);
  first.values!.push("changed");
  assert.deepEqual(openCursor(ctx, query, c), pos);
  refused(
    () => openCursor({ ...ctx, caller: "guest" }, query, c),
    /belongs to another query/,
  );
  refused(() => openCursor(key2, query, c), /not a cursor from this list/);
  // An altered copy of a kept cursor is still refused.
  const i = 20, flip = c[i] === "A" ? "B" : "A";
  refused(
    () => openCursor(ctx, query, c.slice(0, i) + flip + c.slice(i + 1)),
    /not a cursor from this list/,
  );
});

Deno.test("list_cursor: values too long to carry: the row's id and their digest", () => {
  const values = ["é".repeat(7000), "id1"];
  const c = sealCursor(ctx, query, { values, skip: 2 });
  assert.ok(c.length <= 8192, `${c.length} characters`);
  assert.deepEqual(openCursor(ctx, query, c), {
    skip: 2,
    ref: { id: "id1", digest: positionDigest(values) },
  });
  // Short values are carried as ever.
  const short = sealCursor(ctx, query, { values: ["a", "id1"], skip: 0 });
  assert.deepEqual(openCursor(ctx, query, short), {
    values: ["a", "id1"],
    skip: 0,
  });
});
