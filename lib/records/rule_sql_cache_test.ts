/**
 * Unit tests of the rules' SQL kept per caller (`RuleSqlCache` in
 * `ExpressionRules.access`): a kept SQL is never another caller's, never
 * another schema version's, and rules whose SQL depends on more than the
 * caller's fixed members (`auth.user…`, `req`) are compiled every time.
 * Behaviour over HTTP on both databases: tests/rules_test.ts and friends.
 */

import assert from "node:assert/strict";
import type { AuthValue } from "../caller.ts";
import type { Queryable } from "../db/storage.ts";
import { sqliteDialect } from "../db/sqlite_dialect.ts";
import { allFields } from "../schema/builtin.ts";
import type { EntitySchema, FieldDef } from "../schema/types.ts";
import { ExpressionRules } from "./rule_engine.ts";
import type { RuleTarget } from "./rule_types.ts";

const reads: Queryable = {
  query: () => Promise.reject(new Error("no read expected")),
  run: () => Promise.reject(new Error("no write expected")),
  exec: () => Promise.reject(new Error("no statement expected")),
};

const text = (name: string): FieldDef => ({
  id: name,
  name,
  type: "text",
  required: false,
  unique: false,
});

/** A `notes` entity (a new object per call: a new schema version). */
function notes(owner: string): RuleTarget {
  const schema: EntitySchema = {
    id: "notes",
    name: "notes",
    type: "base",
    fields: [text(owner), text("team")],
    view_query: "",
    rules: {} as EntitySchema["rules"],
    has_api: true,
    is_system: false,
    created: "",
    updated: "",
  };
  const all = allFields(schema);
  return {
    id: "notes",
    name: "notes",
    type: "base",
    dialect: sqliteDialect,
    fields: all,
    schema,
    shape: schema,
    updated: "",
    field: (n) => all.find((f) => f.name === n),
    lookup: () => undefined,
    reads,
  };
}

const caller = (id: string, team = "t1"): AuthValue => ({
  id,
  entity: "people",
  type: "user",
  user: { id, team },
});
const REQ = { body: {}, query: {}, method: "GET" };

async function where(
  rules: ExpressionRules,
  entity: RuleTarget,
  expr: string,
  auth: AuthValue,
  req = REQ,
) {
  const access = await rules.access(entity, "get", expr, auth, req);
  return access.where;
}

Deno.test("rule SQL: each caller gets its own parameters, also after the first", async () => {
  const rules = new ExpressionRules();
  const e = notes("owner");
  const expr = "record.owner == auth.id";
  for (let round = 0; round < 3; round++) {
    for (const id of ["u1", "u2", "u3"]) {
      const w = await where(rules, e, expr, caller(id));
      assert.ok(w, "compiled to SQL");
      assert.deepEqual(w.params, [id]);
      assert.match(w.sql, /"owner"/);
    }
  }
});

Deno.test("rule SQL: an answer's parameters are its own to change", async () => {
  const rules = new ExpressionRules();
  const e = notes("owner");
  const expr = "record.owner == auth.id";
  const first = await where(rules, e, expr, caller("u1"));
  first!.params.push("added by a caller");
  assert.deepEqual((await where(rules, e, expr, caller("u1")))!.params, [
    "u1",
  ]);
});

Deno.test("rule SQL: a new schema version compiles anew", async () => {
  const rules = new ExpressionRules();
  const expr = "record.team == 'a' || record.team == auth.id";
  const before = await where(rules, notes("owner"), expr, caller("u1"));
  // The same rule on the next version of the entity (another object).
  const after = await where(rules, notes("author"), expr, caller("u1"));
  assert.deepEqual(before, after, "same fields read: same SQL");
  const ownerRule = "record.owner == auth.id";
  assert.ok(await where(rules, notes("owner"), ownerRule, caller("u1")));
  // `owner` is gone from this version: the rule no longer compiles to it.
  const gone = await where(rules, notes("author"), ownerRule, caller("u1"));
  assert.ok(!gone || !/"owner"/.test(gone.sql), gone?.sql);
});

Deno.test("rule SQL: rules reading the caller's record or the request compile each time", async () => {
  const rules = new ExpressionRules();
  const e = notes("owner");
  const byTeam = "record.team == auth.user.team";
  assert.deepEqual(
    (await where(rules, e, byTeam, caller("u1", "t1")))!.params,
    ["t1"],
  );
  // The same caller after a change of their own record.
  assert.deepEqual(
    (await where(rules, e, byTeam, caller("u1", "t2")))!.params,
    ["t2"],
  );
  const byQuery = "record.team == req.query.team";
  const q = (team: string) => ({ ...REQ, query: { team } });
  assert.deepEqual(
    (await where(rules, e, byQuery, caller("u1"), q("x")))!.params,
    ["x"],
  );
  assert.deepEqual(
    (await where(rules, e, byQuery, caller("u1"), q("y")))!.params,
    ["y"],
  );
});
