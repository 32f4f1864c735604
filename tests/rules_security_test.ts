/**
 * Rule expressions as an attack surface, on both databases (expressions are
 * parsed, never run by eval or new Function, which are no sandbox): a schema whose custom
 * rule leaves the safe subset is refused with 400 naming the rule and the
 * position, and nothing is created or changed; valid rules that read odd
 * things (own `__proto__` keys, huge numbers, long strings, deep bodies, the
 * password hash) evaluate harmlessly, never with a 500.
 *
 * @module
 */

import { forEachDb, startServer, type TestServer } from "./_server.ts";
import { seedUser as seedStoredUser } from "./_server.ts";
import { eq, fail, status } from "./_checks.ts";

const PASSWORD = "password-123";

async function seedUser(
  s: TestServer,
  entity: string,
  values: Record<string, string>,
): Promise<string> {
  return (await seedStoredUser(s, entity, values, PASSWORD)).id;
}

async function tokenOf(
  s: TestServer,
  entity: string,
  id: string,
): Promise<string> {
  const e = s.app.schemas.get(entity)!;
  return (await s.app.sessions.issue(e, (await e.read(id))!)).token;
}

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

forEachDb("rules security", async (t, db) => {
  const s = await startServer(db, { trustProxy: true });
  try {
    const admin = await s.adminToken();
    let r = await s.request("POST", "/api/v1/schemas", {
      token: admin,
      body: {
        name: "users",
        type: "auth",
        fields: [{ name: "role", type: "string" }],
      },
    });
    status(r, 201, "users schema");
    const mallory = await seedUser(s, "users", {
      email: "mallory@example.com",
      role: "writer",
    });
    const victim = await seedUser(s, "users", {
      email: "victim@example.com",
      role: "editor",
    });
    const tMallory = await tokenOf(s, "users", mallory);
    const tVictim = await tokenOf(s, "users", victim);
    const schemaCount = async () => {
      const l = await s.request("GET", "/api/v1/schemas", { token: admin });
      status(l, 200, "list schemas");
      return (l.data as unknown[]).length;
    };

    await t.step(
      "malformed rules are refused at save: 400, rule and position named, nothing created",
      async () => {
        const before = await schemaCount();
        const problems: string[] = [];
        for (let i = 0; i < BAD_RULES.length; i++) {
          const [expr, pos] = BAD_RULES[i];
          const op = OPS[i % OPS.length];
          const name = `evil_${i}`;
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
          const label = `${op}: ${JSON.stringify(expr.slice(0, 60))}`;
          if (c.status !== 400) {
            problems.push(`${label}: ${c.status} ${c.text.slice(0, 200)}`);
          } else {
            if (!c.error.includes(`rules.${op}.expr`)) {
              problems.push(
                `${label}: error does not name rules.${op}.expr: ${c.error}`,
              );
            }
            if (!new RegExp(`\\bat ${pos}\\b`).test(c.error)) {
              problems.push(
                `${label}: error lacks position ${pos}: ${c.error}`,
              );
            }
            if (c.error.length > 500) {
              problems.push(`${label}: error echoes the whole expression`);
            }
          }
          const g = await s.request("GET", `/api/v1/schemas/${name}`, {
            token: admin,
          });
          if (g.status !== 404) {
            problems.push(`${label}: schema exists (${g.status})`);
          }
          const e = await s.request("GET", `/api/v1/entities/${name}`);
          if (e.status !== 404) {
            problems.push(`${label}: entity route exists (${e.status})`);
          }
        }
        if (problems.length) {
          fail(`${problems.length} problem(s):\n  ${problems.join("\n  ")}`);
        }
        eq(await schemaCount(), before, "no schema was created");
      },
    );

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

    await t.step(
      "malformed rules are refused on PATCH; the schema is unchanged",
      async () => {
        const c = await s.request("POST", "/api/v1/schemas", {
          token: admin,
          body: {
            name: "safe",
            type: "base",
            fields: [{ name: "owner", type: "string" }],
            rules: {
              get: { mode: "custom", expr: "record.owner == auth.id" },
              list: { mode: "auth", expr: "" },
            },
          },
        });
        status(c, 201, "safe schema");
        const before = await s.request("GET", "/api/v1/schemas/safe", {
          token: admin,
        });
        for (const [expr, pos] of BAD_RULES.slice(0, 12)) {
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
            if (
              !p.error.includes(`rules.${op}.expr`) ||
              !new RegExp(`\\bat ${pos}\\b`).test(p.error)
            ) {
              fail(`PATCH ${op} ${expr}: error ${p.error}`);
            }
          }
        }
        const after = await s.request("GET", "/api/v1/schemas/safe", {
          token: admin,
        });
        eq(after.data, before.data, "schema unchanged (rules not half-merged)");
        // The old rules still apply: a guest may not list (auth mode).
        status(
          await s.request("GET", "/api/v1/entities/safe"),
          401,
          "guest list",
        );
      },
    );

    // ---- valid rules reading odd things -----------------------------------
    r = await s.request("POST", "/api/v1/schemas", {
      token: admin,
      body: {
        name: "claims",
        type: "base",
        fields: [
          { name: "owner", type: "string" },
          { name: "title", type: "text" },
          { name: "n", type: "double" },
          { name: "data", type: "json" },
        ],
        rules: {
          list: { mode: "custom", expr: "record.owner == auth.id" },
          get: { mode: "custom", expr: "record.owner == auth.id" },
          add: { mode: "custom", expr: "req.body.owner == auth.id" },
          update: { mode: "custom", expr: "record.owner == auth.id" },
          delete: { mode: "custom", expr: "record.owner == auth.id" },
        },
      },
    });
    status(r, 201, "claims schema");
    const count = async () => {
      const l = await s.request(
        "GET",
        "/api/v1/entities/claims?count=true&limit=1",
        {
          token: admin,
        },
      );
      status(l, 200, "count claims");
      return l.data.total as number;
    };
    const victimRec = await s.request("POST", "/api/v1/entities/claims", {
      token: tVictim,
      body: { owner: victim, title: "victim's" },
    });
    status(victimRec, 201, "victim creates a claim");
    const victimId: string = victimRec.data.id;

    await t.step(
      "own __proto__ keys in a JSON body do not satisfy the rule",
      async () => {
        const before = await count();
        for (
          const raw of [
            `{"__proto__": {"owner": "${mallory}"}, "title": "proto"}`,
            `{"__proto__": {"owner": "${victim}"}}`,
            `{"title": "x", "__proto__": {"owner": "${mallory}", "title": "y"}}`,
            `{"constructor": {"prototype": {"owner": "${mallory}"}}}`,
          ]
        ) {
          const c = await s.request("POST", "/api/v1/entities/claims", {
            token: tMallory,
            raw,
            headers: { "content-type": "application/json" },
          });
          status(c, [400, 403], `create with ${raw}`);
        }
        eq(await count(), before, "nothing created");
        // Update of the victim's record with a __proto__ owner.
        const u = await s.request(
          "PATCH",
          `/api/v1/entities/claims/${victimId}`,
          {
            token: tMallory,
            raw: `{"__proto__": {"owner": "${mallory}"}, "title": "pwned"}`,
            headers: { "content-type": "application/json" },
          },
        );
        status(u, [400, 404], "PATCH victim's record with a __proto__ owner");
        const g = await s.request(
          "GET",
          `/api/v1/entities/claims/${victimId}`,
          {
            token: admin,
          },
        );
        eq(
          [g.data.owner, g.data.title],
          [victim, "victim's"],
          "victim's record unchanged",
        );
        // Nothing leaked into this process's prototypes (the server runs in it).
        const probe: Record<string, unknown> = {};
        eq(
          [probe.owner, probe.title],
          [undefined, undefined],
          "Object.prototype clean",
        );
      },
    );

    await t.step(
      "own __proto__ keys in a multipart @jsonPayload do not satisfy the rule",
      async () => {
        const before = await count();
        for (
          const payload of [
            `{"__proto__": {"owner": "${mallory}"}}`,
            `{"__proto__": {"owner": "${mallory}"}, "title": "proto"}`,
          ]
        ) {
          const f = new FormData();
          f.append("@jsonPayload", payload);
          const c = await s.request("POST", "/api/v1/entities/claims", {
            token: tMallory,
            raw: f,
          });
          status(c, [400, 403], `multipart create with ${payload}`);
        }
        const f = new FormData();
        f.append("__proto__", mallory);
        f.append("title", "proto part");
        const c = await s.request("POST", "/api/v1/entities/claims", {
          token: tMallory,
          raw: f,
        });
        status(c, [400, 403], "multipart part named __proto__");
        eq(await count(), before, "nothing created");
        const probe: Record<string, unknown> = {};
        eq(probe.owner, undefined, "Object.prototype clean");
        // The honest way still works.
        const ok = new FormData();
        ok.append("owner", mallory);
        ok.append("title", "mine");
        const m = await s.request("POST", "/api/v1/entities/claims", {
          token: tMallory,
          raw: ok,
        });
        status(m, 201, "multipart create of one's own");
        eq([m.data.owner, m.data.title], [mallory, "mine"], "created");
      },
    );

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

    await t.step("rules cannot read the password hash", async () => {
      const c = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name: "hashes",
          type: "base",
          fields: [{ name: "title", type: "string" }],
          rules: {
            list: {
              mode: "custom",
              expr: 'auth.user.password == undefined && auth.user.email != ""',
            },
            get: {
              mode: "custom",
              expr: 'auth.user.password.startsWith("scrypt")',
            },
          },
        },
      });
      status(c, 201, "hashes schema");
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
      const p = await s.request("PATCH", "/api/v1/schemas/users", {
        token: admin,
        body: {
          rules: {
            list: {
              mode: "custom",
              expr:
                'record.password.startsWith("scrypt") || record.password.length > 0',
            },
          },
        },
      });
      status(p, 200, "users list rule");
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
                "auth.id.length.toFixed == undefined && req.body.x == undefined && req.query['0'] == undefined && " +
                "req.body.hasOwnProperty == undefined && auth.user.toString == undefined && req.query.valueOf == undefined && auth.user.email.length > 0",
            },
          },
        },
      });
      status(c, 201, "gate schema");
      const rec = await s.request("POST", "/api/v1/entities/gate", {
        token: admin,
        body: { title: "g" },
      });
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

    await t.step("no 500 anywhere; server still healthy", async () => {
      await new Promise((r) => setTimeout(r, 700)); // logs are written in batches
      const logs = await s.request(
        "GET",
        "/api/v1/sys/logs?type=request&min_level=warn&limit=1000",
        { token: admin },
      );
      status(logs, 200, "request logs");
      const items = logs.data.items as { status: number; path: string }[];
      if (!items.some((x) => x.status === 400 || x.status === 403)) {
        fail("the refused requests of this suite are not in the logs");
      }
      const fives = items.filter((x) => x.status >= 500);
      if (fives.length) fail(`500s logged: ${JSON.stringify(fives)}`);
      const h = await s.request("GET", "/api/v1/health");
      status(h, 200, "health");
      eq(h.data.status, "ok", "health status");
    });
  } finally {
    await s.close();
  }
});
