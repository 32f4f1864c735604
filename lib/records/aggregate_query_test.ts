/** Unit tests of the aggregate parameters (lib/records/aggregate_query.ts). */

import assert from "node:assert/strict";
import { parseAggregate } from "./aggregate_query.ts";
import {
  adminOnlyRules,
  type EntitySchema,
  type FieldDef,
  type FieldType,
} from "../schema/types.ts";
import { MoonbaseError } from "../errors.ts";

const f = (name: string, type: FieldType): FieldDef => ({
  id: name,
  name,
  type,
  required: false,
  unique: false,
});

const schema = {
  id: "e",
  name: "orders",
  type: "auth",
  view_query: "",
  has_api: true,
  is_system: false,
  created: "",
  updated: "",
  rules: adminOnlyRules(),
  fields: [
    f("status", "select"),
    f("qty", "int"),
    f("price", "double"),
    f("placed", "date"),
    f("body", "text"),
  ],
} as EntitySchema;

const parse = (q: string) => parseAggregate(schema, new URLSearchParams(q));

function refused(q: string, pattern: RegExp): void {
  assert.throws(
    () => parse(q),
    (e) =>
      e instanceof MoonbaseError && e.code === "invalid" &&
      e.message.startsWith("Cannot aggregate records: ") &&
      pattern.test(e.message),
    q,
  );
}

Deno.test("aggregate query: terms, figures and the list's row parameters", () => {
  const a = parse(
    "group=status,created:week&count=1&sum=qty,price&avg=price&min=placed&max=updated&filter=qty>1&token=x",
  );
  assert.deepEqual(a.group, [
    { key: "status", field: "status", kind: "text" },
    { key: "created:week", field: "created", kind: "text", bucket: "week" },
  ]);
  assert.equal(a.count, true);
  assert.deepEqual(a.sum.map((x) => x.name), ["qty", "price"]);
  assert.deepEqual(a.max.map((x) => x.name), ["updated"]);
  assert.equal(a.rows.toString(), "filter=qty%3E1");
  assert.equal(parse("sum=qty").count, false);
  assert.deepEqual(parse("count=true&group=").group, []);
});

Deno.test("aggregate query: refusals name what to send", () => {
  refused("", /ask for count=true/);
  refused("count=false", /ask for count=true/);
  refused("count=true&sort=qty", /unknown parameter "sort"/);
  refused("count=true&x=1&filter=a", /URL-encode the filter/);
  refused("count=true&count=true", /"count" given twice/);
  refused("count=true&group=status,,qty", /empty name/);
  refused("count=true&group=password", /unknown field "password" in group/);
  refused("min=password", /unknown field "password" in min/);
  refused("count=true&group=verified:day", /only date fields/);
  refused("count=true&group=placed:day:x", /placed:day, placed:week/);
  refused("count=true&group=body", /cannot group by body/);
  refused("sum=placed", /sum of placed/);
  refused("max=status", /max of status/);
  refused("sum=qty,qty", /sum names qty twice/);
});

Deno.test("aggregate query: at most 20 figures", () => {
  const many = Array.from({ length: 21 }, (_, i) => `n${i}`);
  const wide = { ...schema, fields: many.map((n) => f(n, "int")) };
  const q = (names: string[]) =>
    parseAggregate(wide, new URLSearchParams({ sum: names.join(",") }));
  assert.equal(q(many.slice(0, 20)).sum.length, 20);
  assert.throws(() => q(many), /at most 20 fields/);
});

Deno.test("aggregate query: views are refused", () => {
  assert.throws(
    () =>
      parseAggregate(
        { ...schema, type: "view" },
        new URLSearchParams("count=true"),
      ),
    /is a view/,
  );
});
