import { assertEquals } from "../../tests/_server.ts";
import { writes } from "./statement_kind.ts";

Deno.test("statement kind: reads and writes by their text", () => {
  const cases: [string, boolean][] = [
    ["SELECT * FROM t", false],
    ["  select 1", false],
    ["VALUES (1)", false],
    ["EXPLAIN QUERY PLAN SELECT 1", false],
    ["PRAGMA table_info(t)", false],
    ["PRAGMA user_version = 2", true],
    ["WITH x AS (SELECT 1) SELECT * FROM x", false],
    ["WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x", true],
    ["INSERT INTO t VALUES (1) RETURNING *", true],
    ["UPDATE t SET a = 1 RETURNING a", true],
    ["DELETE FROM t RETURNING id", true],
    // Unknown shapes count as writes: they only wait for a commit.
    ["/* c */ SELECT 1", true],
    ["", true],
  ];
  for (const [sql, write] of cases) assertEquals(writes(sql), write, sql);
});
