/**
 * Unit tests of `SharedRelations` below HTTP (tests/realtime_relation_rules_test.ts
 * covers the behaviour on both databases): one realtime event decided for
 * many callers under rules that read through relations reads each relation
 * once (the event's record) or once per turn for all callers (`auth.user`),
 * whatever the number of callers, and a new event reads anew.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import type { AuthValue } from "../caller.ts";
import type { Queryable, Row, SqlValue } from "../db/storage.ts";
import { sqliteDialect } from "../db/sqlite_dialect.ts";
import { allFields } from "../schema/builtin.ts";
import { createSql } from "../schema/ddl.ts";
import type { EntitySchema, EntityType, FieldDef } from "../schema/types.ts";
import { ExpressionRules } from "./rule_engine.ts";
import { SharedRelations } from "./rule_shared_reads.ts";
import type { RuleTarget } from "./rule_types.ts";

const db = new DatabaseSync(":memory:");
let statements = 0;
const reads: Queryable = {
  query: (sql: string, params: readonly SqlValue[] = []) => {
    statements++;
    return Promise.resolve(
      db.prepare(sql).all(...(params as (string | number | null)[])) as Row[],
    );
  },
  run: (sql: string, params: readonly SqlValue[] = []) =>
    Promise.resolve(
      Number(
        db.prepare(sql).run(...(params as (string | number | null)[]))
          .changes,
      ),
    ),
  exec: (sql: string) => Promise.resolve(db.exec(sql)),
};

const relation = (name: string, to: string): FieldDef => ({
  id: name,
  name,
  type: "relation",
  required: false,
  unique: false,
  foreign_key: { entity: to, on_delete: "set null" },
});
const plain = (name: string, type: FieldDef["type"]): FieldDef => ({
  id: name,
  name,
  type,
  required: false,
  unique: false,
});

const world = new Map<string, RuleTarget>();
function entity(name: string, type: EntityType, fields: FieldDef[]) {
  const schema: EntitySchema = {
    id: name,
    name,
    type,
    fields,
    view_query: "",
    rules: {} as EntitySchema["rules"],
    has_api: true,
    is_system: false,
    created: "",
    updated: "",
  };
  for (const s of createSql(schema, sqliteDialect)) db.exec(s);
  const all = allFields(schema);
  const target: RuleTarget = {
    id: name,
    name,
    type,
    dialect: sqliteDialect,
    fields: all,
    schema,
    shape: schema,
    updated: "",
    field: (n) => all.find((f) => f.name === n),
    lookup: (n) => world.get(n.toLowerCase()),
    reads,
  };
  world.set(name, target);
  return target;
}

entity("teams", "base", [plain("active", "bool")]);
entity("people", "auth", [relation("team", "teams")]);
entity("projects", "base", [relation("owner", "people")]);
const tasks = entity("tasks", "base", [relation("project", "projects")]);
const T = "2026-01-01T00:00:00.000Z";
db.exec(
  `INSERT INTO "teams" ("id", "created", "updated", "active") VALUES ('t1', '${T}', '${T}', 1), ('t2', '${T}', '${T}', 0)`,
);
db.exec(
  `INSERT INTO "projects" ("id", "created", "updated", "owner") VALUES ('p1', '${T}', '${T}', 'u3')`,
);

/** Callers u0…u(n-1) of `people`, the even ones in team t1. */
function callers(n: number): AuthValue[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `u${i}`,
    entity: "people",
    type: "user",
    user: { id: `u${i}`, team: i % 2 === 0 ? "t1" : "t2" },
  }));
}

const rules = new ExpressionRules();
const REQ = { body: {}, query: {}, method: "GET" };
const task = { id: "k1", project: "p1" };

async function decide(
  expr: string,
  who: AuthValue[],
  shared: SharedRelations,
): Promise<boolean[]> {
  // Every caller asked in one turn, as the hub does for an event.
  return await Promise.all(
    who.map((auth) => rules.allows(expr, auth, REQ, task, tasks, shared)),
  );
}

Deno.test("event reads: the record's relations once for every caller", async () => {
  const who = callers(50);
  statements = 0;
  const seen = await decide(
    "record.project.owner == auth.id",
    who,
    new SharedRelations(),
  );
  assert.deepEqual(seen.flatMap((ok, i) => ok ? [i] : []), [3]);
  assert.equal(statements, 1, "one read of the project for 50 callers");
  // A new event reads anew.
  await decide("record.project.owner == auth.id", who, new SharedRelations());
  assert.equal(statements, 2);
  // Without the event's reads, such a rule denies at once (nothing read).
  assert.equal(
    rules.allows("record.project.owner == auth.id", who[3], REQ, task, tasks),
    false,
  );
  assert.equal(statements, 2);
});

Deno.test("event reads: the callers' relations batched per turn", async () => {
  const who = callers(40);
  statements = 0;
  const seen = await decide(
    "auth.user.team.active == true",
    who,
    new SharedRelations(),
  );
  assert.deepEqual(seen, who.map((_, i) => i % 2 === 0));
  assert.equal(statements, 1, "one read of the teams for 40 callers");
});

Deno.test("event reads: a gate runs the reads one at a time", async () => {
  let running = 0, most = 0, gated = 0;
  let chain: Promise<unknown> = Promise.resolve();
  const shared = new SharedRelations(<T>(read: () => Promise<T>) => {
    gated++;
    const p = chain.then(async () => {
      most = Math.max(most, ++running);
      try {
        return await read();
      } finally {
        running--;
      }
    });
    chain = p.catch(() => {});
    return p;
  });
  const who = callers(10);
  const seen = await Promise.all([
    decide("record.project.owner == auth.id", who, shared),
    decide("auth.user.team.active == true", who, shared),
  ]);
  assert.deepEqual(seen[0].filter(Boolean).length, 1);
  assert.deepEqual(seen[1].filter(Boolean).length, 5);
  assert.equal(gated, 2, "two reads, each through the gate");
  assert.equal(most, 1);
});
