/**
 * Rule expressions as an attack surface, at save time, on both databases
 * (expressions are parsed, never run by eval or new Function, which are no
 * sandbox): a schema whose custom rule leaves the safe subset is refused with
 * 400 naming the rule and the position, and nothing is created or changed.
 *
 * @module
 */

import { forEachDb, startServer, type TestServer } from "./_server.ts";
import { eq, fail, status } from "./_checks.ts";
import { noServerErrors, schema } from "./_rules_security_fixtures.ts";

const OPS = ["list", "get", "add", "update", "delete"] as const;

/**
 * Expressions outside the subset, with the position the error must name.
 * (Positions are 0-based character offsets.)
 */
const BAD_RULES: readonly [string, number][] = [
  ['this.constructor.constructor("return 1")()', 0],
  ["auth.constructor", 5],
  ["auth.__proto__", 5],
  ['record["constructor"]', 7],
  ['auth["__proto__"]', 5],
  ['auth?.["constructor"]', 7],
  ["auth.id.constructor", 8],
  ["record.prototype", 7],
  ["req.body.__defineGetter__", 9],
  ['(0, eval)("1")', 2],
  ['eval("1")', 0],
  ['Function("return 1")', 0],
  ['import("x")', 0],
  ['require("fs")', 0],
  ["globalThis", 0],
  ["Deno.env", 0],
  ["process.env", 0],
  ["user.id == 1", 0],
  ["constructor", 0],
  ["a = 1", 0],
  ["auth.id = 1", 8],
  ["x => 1", 0],
  ["async () => 1", 0],
  ["new Date()", 0],
  ["`template`", 0],
  ["typeof auth", 0],
  ["delete record.x", 0],
  ["record.x++", 9],
  ["auth.id ? 1 : 2", 8],
  ['"a" ?? "b"', 4],
  ["auth.id; 1", 7],
  ["auth.id, 1", 7],
  ["auth.id in record", 8],
  ["[1].includes(1)", 0],
  ["({})", 1],
  ["auth.id.toString()", 8],
  ["auth.id.valueOf()", 8],
  ["/x/.test(auth.id)", 0],
  ["auth.id // comment", 9],
  ["auth\\u002eid", 4],
  ['auth.id == "\\101"', 12],
  ["record.owner == auth.id)", 23],
  ["#x", 0],
  ["(".repeat(100) + "true" + ")".repeat(100), 32],
  ['auth.id == "' + "x".repeat(5000) + '"', 4096],
];

/** The number of schemas the admin sees. */
async function schemaCount(s: TestServer, admin: string): Promise<number> {
  const l = await s.request("GET", "/api/v1/schemas", { token: admin });
  status(l, 200, "list schemas");
  return (l.data as unknown[]).length;
}

/** Fails unless a refusal names the rule's expression and the position. */
function namesRuleAndPosition(
  error: string,
  op: string,
  pos: number,
  label: string,
): void {
  if (!error.includes(`rules.${op}.expr`)) {
    fail(`${label}: error does not name rules.${op}.expr: ${error}`);
  }
  if (!new RegExp(`\\bat ${pos}\\b`).test(error)) {
    fail(`${label}: error lacks position ${pos}: ${error}`);
  }
}

// The steps share one server. Each POST step tries to create a schema of its
// own name and must be refused (one that wrongly succeeds changes only its
// own schema and its own before/after count); each PATCH step must be
// refused on the one `safe` schema and finds it as the fixture stored it.
forEachDb("rules security: malformed rules refused", async (t, db) => {
  const s = await startServer(db);
  try {
    const admin = await s.adminToken();
    for (const [i, [expr, pos]] of BAD_RULES.entries()) {
      // The operations take turns, so every rule slot meets bad expressions.
      const op = OPS[i % OPS.length];
      const label = `${op}: ${JSON.stringify(expr.slice(0, 60))}`;
      await t.step(`POST ${label} → 400 at ${pos}`, async () => {
        const name = `evil_${i}`;
        const before = await schemaCount(s, admin);
        const c = await s.request("POST", "/api/v1/schemas", {
          token: admin,
          body: {
            name,
            type: "base",
            fields: [{ name: "owner", type: "string" }],
            rules: {
              list: { mode: "public", expr: "" },
              [op]: { mode: "custom", expr },
            },
          },
        });
        status(c, 400, label);
        namesRuleAndPosition(c.error, op, pos, label);
        if (c.error.length > 500) {
          fail(`${label}: error echoes the whole expression`);
        }
        const g = await s.request("GET", `/api/v1/schemas/${name}`, {
          token: admin,
        });
        status(g, 404, `${label}: no schema`);
        const e = await s.request("GET", `/api/v1/entities/${name}`);
        status(e, 404, `${label}: no entity route`);
        eq(await schemaCount(s, admin), before, "no schema was created");
      });
    }

    await t.step("node limit: 601 nodes → 400", async () => {
      const expr = "1||".repeat(300) + "1";
      const c = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name: "too_many_nodes",
          type: "base",
          rules: { get: { mode: "custom", expr } },
        },
      });
      status(c, 400, "601 nodes");
      if (!c.error.includes("rules.get.expr") || !/\bat \d+\b/.test(c.error)) {
        fail(`node limit error: ${c.error}`);
      }
    });

    // The PATCH steps' fixture: one schema and its stored form. Every step
    // compares the schema with this snapshot, not with what a step before it
    // left.
    await schema(s, admin, {
      name: "safe",
      type: "base",
      fields: [{ name: "owner", type: "string" }],
      rules: {
        get: { mode: "custom", expr: "record.owner == auth.id" },
        list: { mode: "auth", expr: "" },
      },
    });
    const safe = await s.request("GET", "/api/v1/schemas/safe", {
      token: admin,
    });
    status(safe, 200, "safe schema");
    for (const [expr, pos] of BAD_RULES.slice(0, 12)) {
      await t.step(
        `PATCH ${JSON.stringify(expr)} → 400 at ${pos}`,
        async () => {
          for (const op of ["get", "update"] as const) {
            const p = await s.request("PATCH", "/api/v1/schemas/safe", {
              token: admin,
              body: {
                rules: {
                  list: { mode: "public", expr: "" },
                  [op]: { mode: "custom", expr },
                },
              },
            });
            status(p, 400, `PATCH ${op} ${expr}`);
            namesRuleAndPosition(p.error, op, pos, `PATCH ${op} ${expr}`);
          }
          const after = await s.request("GET", "/api/v1/schemas/safe", {
            token: admin,
          });
          eq(after.data, safe.data, "schema unchanged (rules not half-merged)");
          // The old rules still apply: a guest may not list (auth mode).
          status(
            await s.request("GET", "/api/v1/entities/safe"),
            401,
            "guest list",
          );
        },
      );
    }

    await noServerErrors(s, admin);
  } finally {
    await s.close();
  }
});
