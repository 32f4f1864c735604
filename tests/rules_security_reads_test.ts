/**
 * Valid rules reading odd things, on both databases: huge numbers, very long
 * strings and deeply nested bodies evaluate harmlessly (a rule is true or
 * false, never a 500) and values outside what a field or the body limit
 * accepts are refused; a rule never reads the password hash
 * (`auth.user.password`, `record.password` of an auth entity: refused when
 * saved, and reading nothing when stored by an older version) nor an
 * inherited member (`toString`, `hasOwnProperty`, `toFixed`), and odd query
 * parameters (`__proto__`, repeated or bracketed keys, NUL bytes) do not
 * satisfy a rule on `req.query`.
 *
 * @module
 */

import { forEachDb, startServer, type TestServer } from "./_server.ts";
import { eq, status } from "./_checks.ts";
import { members, noServerErrors } from "./_rules_security_fixtures.ts";

/**
 * Sets rules of `entity` behind Moonbase's back, as a database written by
 * an older version (before rules were checked for names) holds them.
 */
async function storeRules(
  s: TestServer,
  entity: string,
  rules: Record<string, { mode: string; expr: string }>,
): Promise<void> {
  const [row] = await s.app.storage.query(
    `SELECT "schema" FROM "mb_tables" WHERE "name" = ?`,
    [entity],
  );
  const schema = JSON.parse(String(row.schema));
  Object.assign(schema.rules, rules);
  await s.app.storage.run(
    `UPDATE "mb_tables" SET "schema" = ? WHERE "name" = ?`,
    [JSON.stringify(schema), entity],
  );
  await s.app.schemas.load();
}

// The steps share one server and the `users` fixture; each step creates an
// entity of its own (nums, texts, deep, hashes, gate) and reads and writes
// only that one. The hash step also sets the list rule of `users`, which no
// other step reads.
forEachDb("rules security: odd things a rule reads", async (t, db) => {
  const s = await startServer(db);
  try {
    const { admin, tMallory } = await members(s);

    await t.step("huge numbers", async () => {
      const c = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name: "nums",
          type: "base",
          fields: [{ name: "n", type: "double" }, { name: "i", type: "int" }],
          rules: {
            list: { mode: "public", expr: "" },
            get: {
              mode: "custom",
              expr: "record.n < 1e309 && record.n > -1e309",
            },
            add: {
              mode: "custom",
              expr: "req.body.n < 1e309 && req.body.n * 1e308 != 0",
            },
            update: { mode: "custom", expr: "req.body.n + 1e308 > -1e309" },
          },
        },
      });
      status(c, 201, "nums schema");
      const a = await s.request("POST", "/api/v1/entities/nums", {
        token: tMallory,
        body: { n: 1.5e308 },
      });
      status(a, 201, "n = 1.5e308 (n * 1e308 is Infinity, != 0)");
      eq(a.data.n, 1.5e308, "stored");
      const id: string = a.data.id;
      const g = await s.request("GET", `/api/v1/entities/nums/${id}`, {
        token: tMallory,
      });
      status(g, 200, "get (1.5e308 < Infinity)");
      for (
        const raw of [
          '{"n": 1e309}',
          '{"n": -1e309}',
          '{"n": 5, "i": 1e20}',
          '{"n": 5, "i": 123456789012345678901234567890}',
          '{"n": 1e-400}',
        ]
      ) {
        const x = await s.request("POST", "/api/v1/entities/nums", {
          token: tMallory,
          raw,
          headers: { "content-type": "application/json" },
        });
        status(x, [400, 403], `create ${raw}`);
      }
      const l = await s.request(
        "GET",
        `/api/v1/entities/nums?count=true&filter=${
          encodeURIComponent("n < 1e309 && n > 1e307 && n * 2 > 1e308")
        }`,
      );
      status(l, 200, "filter with huge literals");
      eq(l.data.total, 1, "one row");
      const u = await s.request("PATCH", `/api/v1/entities/nums/${id}`, {
        token: tMallory,
        raw: '{"n": 1e309}',
        headers: { "content-type": "application/json" },
      });
      status(u, [400, 403], "PATCH n = 1e309");
      const after = await s.request("GET", `/api/v1/entities/nums/${id}`, {
        token: admin,
      });
      eq(after.data.n, 1.5e308, "unchanged");
    });

    await t.step("very long strings in the body", async () => {
      const c = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name: "texts",
          type: "base",
          fields: [{ name: "body", type: "text" }],
          rules: {
            list: { mode: "public", expr: "" },
            // `+` is bounded to 64 KiB: past that the rule is false, not a crash.
            add: {
              mode: "custom",
              expr:
                '(req.body.body + req.body.body).length > 0 && auth.id != ""',
            },
            update: {
              mode: "custom",
              expr:
                'req.body.body.endsWith("z") && req.body.body.includes("needle") && req.body.body.length > 500000',
            },
          },
        },
      });
      status(c, 201, "texts schema");
      const big = "a".repeat(300_000) + "needle" + "b".repeat(300_000) + "z";
      const a = await s.request("POST", "/api/v1/entities/texts", {
        token: tMallory,
        body: { body: big },
      });
      status(a, 403, "concatenation past 64 KiB makes the rule false");
      const small = await s.request("POST", "/api/v1/entities/texts", {
        token: tMallory,
        body: { body: "short" },
      });
      status(small, 201, "short body passes");
      const u = await s.request(
        "PATCH",
        `/api/v1/entities/texts/${small.data.id}`,
        {
          token: tMallory,
          body: { body: big },
        },
      );
      status(u, 200, "600 000-character body read by methods");
      eq(u.data.body.length, big.length, "stored");
      const l = await s.request(
        "GET",
        "/api/v1/entities/texts?count=true&limit=1",
      );
      eq(l.data.total, 1, "one text");
    });

    await t.step("deep nesting within the allowed body depth", async () => {
      const c = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name: "deep",
          type: "base",
          fields: [{ name: "data", type: "json" }],
          rules: {
            list: { mode: "public", expr: "" },
            add: {
              mode: "custom",
              expr: "req.body.data" + ".a".repeat(29) + ' == "leaf"',
            },
            update: {
              mode: "custom",
              expr: "req.body.data.includes(1) || req.body.data + '' != ''",
            },
          },
        },
      });
      status(c, 201, "deep schema");
      // body (1) → data (2) → 29 nested objects → "leaf": depth 31.
      let data: unknown = "leaf";
      for (let i = 0; i < 29; i++) data = { a: data };
      const a = await s.request("POST", "/api/v1/entities/deep", {
        token: tMallory,
        body: { data },
      });
      status(a, 201, "rule reads 29 levels down");
      eq(a.data.data, data, "stored as sent");
      let wrong: unknown = "other";
      for (let i = 0; i < 29; i++) wrong = { a: wrong };
      status(
        await s.request("POST", "/api/v1/entities/deep", {
          token: tMallory,
          body: { data: wrong },
        }),
        403,
        "wrong leaf",
      );
      let shallow: unknown = "leaf";
      for (let i = 0; i < 5; i++) shallow = { a: shallow };
      status(
        await s.request("POST", "/api/v1/entities/deep", {
          token: tMallory,
          body: { data: shallow },
        }),
        403,
        "reading past the end gives undefined, not a crash",
      );
      let arr: unknown = [1];
      for (let i = 0; i < 29; i++) arr = [arr, "x"];
      const u = await s.request("PATCH", `/api/v1/entities/deep/${a.data.id}`, {
        token: tMallory,
        body: { data: arr },
      });
      // Nested arrays join to a non-empty string (no recursion blow-up).
      status(u, 200, "nested arrays converted to a string");
      let tooDeep: unknown = "leaf";
      for (let i = 0; i < 40; i++) tooDeep = { a: tooDeep };
      status(
        await s.request("POST", "/api/v1/entities/deep", {
          token: tMallory,
          body: { data: tooDeep },
        }),
        400,
        "nested deeper than the body limit",
      );
      const l = await s.request("GET", "/api/v1/entities/deep?count=true");
      eq(l.data.total, 1, "one deep record");
    });

    // ---- what a rule may read of the caller and the request ----------------

    await t.step("rules cannot read the password hash", async () => {
      const probes = {
        list: {
          mode: "custom",
          expr: 'auth.user.password == undefined && auth.user.email != ""',
        },
        get: {
          mode: "custom",
          expr: 'auth.user.password.startsWith("scrypt")',
        },
      };
      const c = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name: "hashes",
          type: "base",
          fields: [{ name: "title", type: "string" }],
          rules: probes,
        },
      });
      // A rule naming the password is refused when saved...
      status(c, 400, "hashes schema with password probes");
      eq(
        c.error.includes('unknown name "auth.user.password"'),
        true,
        c.error,
      );
      status(
        await s.request("POST", "/api/v1/schemas", {
          token: admin,
          body: {
            name: "hashes",
            type: "base",
            fields: [{ name: "title", type: "string" }],
          },
        }),
        201,
        "hashes schema",
      );
      // ...and one stored before that check reads nothing.
      await storeRules(s, "hashes", probes);
      const rec = await s.request("POST", "/api/v1/entities/hashes", {
        token: admin,
        body: { title: "t" },
      });
      status(rec, 201, "seed");
      const l = await s.request("GET", "/api/v1/entities/hashes", {
        token: tMallory,
      });
      status(l, 200, "auth.user.password is undefined");
      eq(l.data.items.length, 1, "listed");
      status(
        await s.request("GET", `/api/v1/entities/hashes/${rec.data.id}`, {
          token: tMallory,
        }),
        403,
        "a rule probing the hash is false",
      );
      // An auth entity's own rows: record.password is not readable either.
      const list = {
        mode: "custom",
        expr:
          'record.password.startsWith("scrypt") || record.password.length > 0',
      };
      const p = await s.request("PATCH", "/api/v1/schemas/users", {
        token: admin,
        body: { rules: { list } },
      });
      status(p, 400, "users list rule");
      await storeRules(s, "users", { list });
      const ul = await s.request("GET", "/api/v1/entities/users?count=true", {
        token: tMallory,
      });
      status(ul, 200, "users list");
      eq([ul.data.items, ul.data.total], [[], 0], "no row passes a hash probe");
    });

    await t.step("odd query parameters and members", async () => {
      const c = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name: "gate",
          type: "base",
          fields: [{ name: "title", type: "string" }],
          rules: {
            get: { mode: "custom", expr: 'req.query.key == "k"' },
            delete: {
              mode: "custom",
              expr:
                "auth.id.length.toFixed == undefined && req.query.x == undefined && req.query['0'] == undefined && " +
                "req.query.hasOwnProperty == undefined && auth.user.email.toString == undefined && req.query.valueOf == undefined && auth.user.email.length > 0",
            },
          },
        },
      });
      status(c, 201, "gate schema");
      const rec = await s.request("POST", "/api/v1/entities/gate", {
        token: admin,
        body: { title: "g" },
      });
      status(rec, 201, "seed gate");
      const id: string = rec.data.id;
      for (
        const q of [
          "__proto__=k",
          "__proto__[key]=k",
          "constructor=k",
          "key=k&key=j",
          "key[]=k",
          "key=%00k",
        ]
      ) {
        const r = await s.request("GET", `/api/v1/entities/gate/${id}?${q}`, {
          token: tMallory,
        });
        status(r, 403, `get ?${q}`);
      }
      const ok = await s.request("GET", `/api/v1/entities/gate/${id}?key=k`, {
        token: tMallory,
      });
      status(ok, 200, "get ?key=k");
      const d = await s.request("DELETE", `/api/v1/entities/gate/${id}`, {
        token: tMallory,
      });
      status(d, 204, "inherited and odd member reads are undefined");
    });

    await noServerErrors(s, admin);
  } finally {
    await s.close();
  }
});
