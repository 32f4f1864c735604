/**
 * Attacks on reads through relations in a caller's `filter` (issue 31):
 * each step is a way a filter could learn about a record or a row the
 * caller's own rules hide, on both databases. See
 * tests/relation_rules_test.ts for the features themselves.
 *
 * One server per database; each step makes the records it reads.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  insertSeries,
  padded,
  type Reply,
  startServer,
  type TestServer,
} from "./_server.ts";
import { createSchema, fastUser, issue } from "./_auth_fixtures.ts";

const PUBLIC = { mode: "public", expr: "" };
const custom = (expr: string) => ({ mode: "custom", expr });
const relation = (name: string, entity: string, on_delete = "set null") => ({
  name,
  type: "relation",
  foreign_key: { entity, on_delete },
});

async function call(
  s: TestServer,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<Reply> {
  return await s.request(method, `/api/v1/${path}`, { token, body });
}

async function make(
  s: TestServer,
  admin: string,
  entity: string,
  body: Record<string, unknown>,
): Promise<string> {
  const r = await call(s, "POST", `entities/${entity}`, admin, body);
  assertStatus(r, 201, `create ${entity}`);
  return String(r.data.id);
}

/** The ids a filtered list answers, sorted. */
async function matching(
  s: TestServer,
  entity: string,
  token: string,
  filter: string,
): Promise<string[]> {
  const r = await call(
    s,
    "GET",
    `entities/${entity}?limit=100&filter=${encodeURIComponent(filter)}`,
    token,
  );
  assertStatus(r, 200, `${entity}?filter=${filter}`);
  return (r.data.items as { id: string }[]).map((x) => x.id).sort();
}

forEachDb("attacks on filters that read through relations", async (t, db) => {
  const s = await startServer(db);
  try {
    const admin = await s.adminToken();

    await t.step(
      "a related entity's rule reading auth.user's relations reads them as a rule, not through the caller's view",
      async () => {
        // Teams are private to their members' eyes only when open; a
        // restricted team is hidden from its own members.
        await createSchema(s, admin, {
          name: "crews",
          type: "base",
          fields: [{ name: "name", type: "string" }, {
            name: "level",
            type: "string",
          }],
          rules: {
            list: custom('record.level != "restricted"'),
            get: custom('record.level != "restricted"'),
          },
        });
        await createSchema(s, admin, {
          name: "agents",
          type: "auth",
          fields: [relation("crew", "crews")],
          rules: { list: PUBLIC, get: PUBLIC },
        });
        // Bans are the admin's notes: hidden from the banned agent.
        await createSchema(s, admin, {
          name: "bans",
          type: "base",
          fields: [
            { name: "shown", type: "bool" },
            relation("agent", "agents"),
          ],
          rules: {
            list: custom("record.shown == true"),
            get: custom("record.shown == true"),
          },
        });
        // Dossiers: not for agents of a restricted crew, nor banned ones.
        const dossierRule =
          'auth.user.crew.level != "restricted" && auth.user.bans_via_agent.length == 0';
        await createSchema(s, admin, {
          name: "dossiers",
          type: "base",
          fields: [{ name: "code", type: "string" }],
          rules: { list: custom(dossierRule), get: custom(dossierRule) },
        });
        await createSchema(s, admin, {
          name: "missions",
          type: "base",
          fields: [
            { name: "title", type: "string" },
            relation(
              "dossier",
              "dossiers",
            ),
          ],
          rules: { list: PUBLIC, get: PUBLIC },
        });
        const restricted = await make(s, admin, "crews", {
          name: "r",
          level: "restricted",
        });
        const open = await make(s, admin, "crews", {
          name: "o",
          level: "open",
        });
        const mallory = await fastUser(s, "agents", { email: "m@x.io" });
        const banned = await fastUser(s, "agents", { email: "b@x.io" });
        const good = await fastUser(s, "agents", { email: "g@x.io" });
        for (
          const [id, crew] of [
            [mallory.id, restricted],
            [banned.id, open],
            [good.id, open],
          ]
        ) {
          assertStatus(
            await call(s, "PATCH", `entities/agents/${id}`, admin, { crew }),
            200,
          );
        }
        await make(s, admin, "bans", { shown: false, agent: banned.id });
        const dossier = await make(s, admin, "dossiers", { code: "s3cret" });
        const mission = await make(s, admin, "missions", {
          title: "m",
          dossier,
        });
        const tokens = {
          mallory: await issue(s, "agents", mallory.id),
          banned: await issue(s, "agents", banned.id),
          good: await issue(s, "agents", good.id),
        };
        // The rule, read as the admin wrote it: only the good agent reads the dossier.
        for (
          const [who, want] of [
            ["mallory", 403],
            ["banned", 403],
            ["good", 200],
          ] as const
        ) {
          assertStatus(
            await call(s, "GET", `entities/dossiers/${dossier}`, tokens[who]),
            want,
            who,
          );
        }
        // The filter reads the caller's own crew and bans (hidden from it:
        // absent, empty) — the dossier's rule must not read them that way.
        const touch =
          ' && auth.user.crew.id != "x" && auth.user.bans_via_agent.length >= 0';
        const probes = [
          `dossier.code == "s3cret"${touch}`,
          `dossier.code >= "s"${touch}`,
          // Row by row: `+ ""` has no SQL.
          `(dossier.code + "") == "s3cret"${touch}`,
        ];
        for (const f of probes) {
          assertEquals(await matching(s, "missions", tokens.mallory, f), [], f);
          assertEquals(await matching(s, "missions", tokens.banned, f), [], f);
          assertEquals(
            await matching(s, "missions", tokens.good, f),
            [mission],
            f,
          );
        }
        // Without reading them in the filter, the same.
        assertEquals(
          await matching(
            s,
            "missions",
            tokens.good,
            'dossier.code == "s3cret"',
          ),
          [mission],
        );
        assertEquals(
          await matching(
            s,
            "missions",
            tokens.mallory,
            'dossier.code == "s3cret"',
          ),
          [],
        );
        // Sorting reads the rule the same way (the good agent sees the code).
        const sorted = await call(
          s,
          "GET",
          "entities/missions?sort=dossier.code",
          tokens.good,
        );
        assertStatus(sorted, 200);
        assertEquals(sorted.data.items.length, 1);
      },
    );
    await t.step(
      "a back-relation under a per-row rule: hidden rows never crowd out visible ones",
      async () => {
        await createSchema(s, admin, {
          name: "watchers",
          type: "auth",
          fields: [],
          rules: { list: PUBLIC, get: PUBLIC },
        });
        const eve = await fastUser(s, "watchers", { email: "e@x.io" });
        const token = await issue(s, "watchers", eve.id);
        await createSchema(s, admin, {
          name: "threads",
          type: "base",
          fields: [{ name: "title", type: "string" }],
          rules: { list: PUBLIC, get: PUBLIC },
        });
        // `+ ""` has no SQL: the notes' list rule is checked per row.
        const shown = '(record.body + "") == "ok"';
        await createSchema(s, admin, {
          name: "notes",
          type: "base",
          fields: [
            { name: "body", type: "string" },
            relation(
              "thread",
              "threads",
              "cascade",
            ),
          ],
          rules: { list: custom(shown), get: custom(shown) },
        });
        const flooded = await make(s, admin, "threads", { title: "flooded" });
        const quiet = await make(s, admin, "threads", { title: "quiet" });
        // 1005 older notes Eve may not read, then one she may, on each thread.
        await insertSeries(s, "notes", 1005, {
          id: padded("hidden-", 6),
          body: "'no'",
          thread: "?",
          created: "'2000-01-01T00:00:00.000Z'",
        }, [flooded]);
        for (const thread of [flooded, quiet]) {
          await make(s, admin, "notes", { body: "ok", thread });
        }
        // Eve reads one note of each thread.
        const r = await call(s, "GET", "entities/notes?limit=10", token);
        assertStatus(r, 200);
        assertEquals(r.data.items.length, 2);
        for (
          const [f, want] of [
            ["notes_via_thread.length == 1", [quiet]],
            ["notes_via_thread.length == 0", []],
            ['notes_via_thread.every(n => n.body != "ok")', []],
            ['!notes_via_thread.some(n => n.body == "ok")', []],
          ] as const
        ) {
          assertEquals(
            await matching(s, "threads", token, f),
            [...want].sort(),
            f,
          );
        }
        // A back-relation read again and again for one row multiplies the
        // work (three nested lists of 300 held SQLite ~14 s, blocking every
        // request): refused, for admins too.
        for (
          const [entity, f, why] of [
            [
              "threads",
              'notes_via_thread.some(n => n.thread.notes_via_thread.some(m => m.thread.notes_via_thread.some(o => o.body == "zz")))',
              "of a related record",
            ],
            [
              "notes",
              "thread.notes_via_thread.length > 1",
              "of a related record",
            ],
            [
              "threads",
              'notes_via_thread.some(n => notes_via_thread.some(m => m.body == n.body + "z"))',
              "inside .some/.every",
            ],
          ] as const
        ) {
          for (const who of [token, admin]) {
            const r = await call(
              s,
              "GET",
              `entities/${entity}?filter=${encodeURIComponent(f)}`,
              who,
            );
            assertStatus(r, 400, f);
            assert(r.error.includes(`back-relation ${why}`), r.error);
          }
        }
      },
    );
  } finally {
    await s.close();
  }
});
