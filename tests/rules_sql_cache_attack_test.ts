/**
 * Attacks on the rules' SQL kept per caller and schema version
 * (`RuleSqlCache`, lib/records/rule_sql_cache.ts) and on the record routes'
 * query string (`ctx.query`), one server per database. Each step warms the
 * kept SQL with one caller and then asks as another that shares part of its
 * key, or after a schema change, and compares every answer with what the
 * rule says of the rows the admin sees:
 *
 * - callers sharing an id: a user of `users` and one of `members`, a user
 *   whose id is the admin's, guests (id ""), and rows with an empty owner;
 * - the same callers through an impersonation token and API keys;
 * - writes (update, delete, batch) through the kept `where`;
 * - expand, and query strings: `?`, `?&`, an encoded `%3F`;
 * - rules reading `auth.user…` or `req` (never kept): the caller's team
 *   changing between requests, `req.query` changing;
 * - `{ as }` from a script with more callers than the cache keeps per entity;
 * - a field renamed and a json field added under the old name, the rule's
 *   text unchanged; the entity deleted and created anew under its name;
 *   a view whose query changes under the same rule.
 *
 * @module
 */

import type { AuthValue } from "../lib/caller.ts";
import { looseEquals } from "../lib/rules/values.ts";
import { MAX_CALLERS } from "../lib/records/rule_sql_cache.ts";
import {
  forEachDb,
  seedUser,
  startServer,
  type TestServer,
} from "./_server.ts";
import { eq, status } from "./_checks.ts";
import {
  adminRows,
  ids,
  type Page,
  PASSWORD,
  type Rec,
  schema,
  tokenOf,
} from "./_rules_fixtures.ts";

/** Alice (users) and mallory (members) share this id. */
const SHARED = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
const BOB = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4b0b";

/** The notes' rule: users see their own rows; guests the public ones. */
const NOTES_RULE = 'auth.entity == "users" && record.owner == auth.id || ' +
  'auth.type == "guest" && record.kind == "public"';
const custom = (expr: string) => ({ mode: "custom", expr });
const OWN = custom("record.owner == auth.id");

/** A caller as the notes' rule sees it. */
interface Who {
  name: string;
  token: string | undefined;
  type: "guest" | "user";
  entity: string;
  id: string;
}

/** What NOTES_RULE lets `who` see of `row` (`==` as in JavaScript). */
function seesNote(row: Rec, who: Who): boolean {
  return who.entity === "users" && looseEquals(row.owner, who.id) ||
    who.type === "guest" && row.kind === "public";
}

interface World {
  s: TestServer;
  admin: string;
  adminId: string;
  alice: Who;
  bob: Who;
  mallory: Who;
  /** A user of `users` whose id is the admin's. */
  twin: Who;
  guest: Who;
}

async function world(s: TestServer): Promise<World> {
  const admin = await s.adminToken();
  const admins = s.app.schemas.get("mb_admins")!;
  const adminId = String(
    (await admins.queryFromCols("admin@example.com", ["email"]))!.id,
  );
  await schema(s, admin, {
    name: "users",
    type: "auth",
    fields: [{ name: "team", type: "string" }],
  });
  await schema(s, admin, { name: "members", type: "auth", fields: [] });
  await schema(s, admin, {
    name: "tags",
    type: "base",
    fields: [{ name: "owner", type: "string" }, {
      name: "name",
      type: "string",
    }],
    rules: { list: OWN, get: OWN },
  });
  const rule = custom(NOTES_RULE);
  await schema(s, admin, {
    name: "notes",
    type: "base",
    fields: [
      { name: "owner", type: "string" },
      { name: "kind", type: "string" },
      { name: "title", type: "string" },
      { name: "tag", type: "relation", foreign_key: { entity: "tags" } },
    ],
    rules: { list: rule, get: rule, update: rule, delete: rule },
  });
  const user = async (entity: string, id: string, email: string) => {
    await seedUser(s, entity, { id, email }, PASSWORD);
    return await tokenOf(s, entity, id);
  };
  const who = (
    name: string,
    token: string | undefined,
    entity: string,
    id: string,
  ): Who => ({
    name,
    token,
    type: token ? "user" : "guest",
    entity,
    id,
  });
  /** A user of `entity` with id `id`, signed up as `<name>@example.com`. */
  const signedUp = async (name: string, entity: string, id: string) =>
    who(name, await user(entity, id, `${name}@example.com`), entity, id);
  const w: World = {
    s,
    admin,
    adminId,
    alice: await signedUp("alice", "users", SHARED),
    bob: await signedUp("bob", "users", BOB),
    mallory: await signedUp("mallory", "members", SHARED),
    twin: await signedUp("twin", "users", adminId),
    guest: who("guest", undefined, "", ""),
  };
  const tag = async (owner: string, name: string) => {
    const r = await s.request("POST", "/api/v1/entities/tags", {
      token: admin,
      body: { owner, name },
    });
    status(r, 201, "tag");
    return r.data.id as string;
  };
  const aliceTag = await tag(SHARED, "alice's");
  const bobTag = await tag(BOB, "bob's");
  let n = 0;
  for (const owner of [SHARED, BOB, adminId, ""]) {
    for (const kind of ["public", "private"]) {
      for (const t of [aliceTag, bobTag]) {
        const r = await s.request("POST", "/api/v1/entities/notes", {
          token: admin,
          body: { owner, kind, title: `note ${n++}`, tag: t },
        });
        status(r, 201, "note");
      }
    }
  }
  return w;
}

/** Every caller of the world, in an order that warms the kept SQL for the next. */
const everyone = (w: World): Who[] => [
  w.alice,
  w.mallory,
  w.guest,
  w.bob,
  w.twin,
  w.alice,
  w.guest,
  w.mallory,
];

/** A list as `who` and every row's get agree with the rule. */
async function checkNotes(
  w: World,
  who: Who,
  sees: (row: Rec, who: Who) => boolean = seesNote,
  entity = "notes",
): Promise<void> {
  const rows = await adminRows(w.s, w.admin, entity);
  const expected = ids(rows.filter((r) => sees(r, who)));
  const r = await w.s.request(
    "GET",
    `/api/v1/entities/${entity}?count=true&limit=500`,
    { token: who.token },
  );
  status(r, 200, `${who.name} lists ${entity}`);
  const page = r.data as Page;
  eq(ids(page.items), expected, `${who.name}'s list of ${entity}`);
  eq(page.total, expected.length, `${who.name}'s total of ${entity}`);
  for (const row of rows) {
    const g = await w.s.request(
      "GET",
      `/api/v1/entities/${entity}/${row.id}`,
      { token: who.token },
    );
    status(g, sees(row, who) ? 200 : 404, `${who.name} gets ${row.title}`);
  }
}

forEachDb("rules' kept SQL: attacks", async (t, db) => {
  const s = await startServer(db);
  try {
    const w = await world(s);
    const { admin } = w;

    await t.step(
      "callers sharing an id, guests and rows owned by ''",
      async () => {
        for (const who of everyone(w)) await checkNotes(w, who);
        // Mallory shares alice's id, in another auth entity: nothing.
        const m = await s.request("GET", "/api/v1/entities/notes", {
          token: w.mallory.token,
        });
        eq(m.data.items, [], "mallory sees nothing");
      },
    );

    await t.step("impersonation and API keys act as their user", async () => {
      const imp = await s.request(
        "POST",
        `/api/v1/auth/users/impersonate/${SHARED}`,
        { token: admin, body: {} },
      );
      status(imp, 200, "impersonate alice");
      const key = async (entity: string, user_id: string) => {
        const r = await s.request("POST", "/api/v1/sys/api-keys", {
          token: admin,
          body: {
            name: "job",
            entity,
            user_id,
            expires: "2099-01-01T00:00:00Z",
          },
        });
        status(r, 201, `key of ${entity}`);
        return r.data.key as string;
      };
      const callers: Who[] = [
        {
          ...w.mallory,
          name: "mallory's key",
          token: await key("members", SHARED),
        },
        { ...w.alice, name: "alice impersonated", token: imp.data.token },
        { ...w.alice, name: "alice's key", token: await key("users", SHARED) },
        { ...w.mallory, name: "mallory's key again" },
        { ...w.twin, name: "twin's key", token: await key("users", w.adminId) },
      ];
      for (const who of callers) await checkNotes(w, who);
    });

    await t.step(
      "writes through the kept SQL: update, delete, batch",
      async () => {
        const rows = await adminRows(s, admin, "notes");
        // Alice's private notes: no one else's rule lets them at these.
        const alices = rows.filter((r) =>
          r.owner === SHARED && r.kind === "private"
        );
        const bobs = rows.filter((r) => r.owner === BOB);
        // Warm every caller's SQL on the update and delete rules first.
        for (const who of [w.alice, w.bob, w.mallory, w.guest]) {
          const mine = rows.find((r) => seesNote(r, who));
          const target = mine ?? bobs[0];
          const r = await s.request(
            "PATCH",
            `/api/v1/entities/notes/${target.id}`,
            {
              token: who.token,
              body: { title: target.title },
            },
          );
          status(r, mine ? 200 : 404, `${who.name} updates`);
        }
        const before = await adminRows(s, admin, "notes");
        for (const who of [w.mallory, w.bob, w.guest, w.twin]) {
          for (const verb of ["PATCH", "DELETE"]) {
            const r = await s.request(
              verb,
              `/api/v1/entities/notes/${alices[0].id}`,
              {
                token: who.token,
                ...(verb === "PATCH" ? { body: { title: "taken" } } : {}),
              },
            );
            status(r, 404, `${who.name} ${verb} alice's note`);
          }
          const b = await s.request("POST", "/api/v1/batch", {
            token: who.token,
            body: {
              requests: [
                {
                  method: "PATCH",
                  url: `/api/v1/entities/notes/${alices[1].id}`,
                  body: { title: "taken" },
                },
                {
                  method: "DELETE",
                  url: `/api/v1/entities/notes/${alices[0].id}`,
                },
              ],
            },
          });
          status(b, [401, 404], `${who.name}'s batch on alice's notes`);
        }
        eq(await adminRows(s, admin, "notes"), before, "nothing changed");
        // Alice can, by the kept SQL, and cannot move a note out of her rule.
        const own = await s.request(
          "PATCH",
          `/api/v1/entities/notes/${alices[0].id}`,
          {
            token: w.alice.token,
            body: { title: "alice's" },
          },
        );
        status(own, 200, "alice updates her note");
        const away = await s.request(
          "PATCH",
          `/api/v1/entities/notes/${alices[0].id}`,
          {
            token: w.alice.token,
            body: { owner: BOB },
          },
        );
        status(away, [403, 404], "alice gives her note away");
        const back = await s.request(
          "PATCH",
          `/api/v1/entities/notes/${alices[0].id}`,
          {
            token: admin,
            body: { title: alices[0].title },
          },
        );
        status(back, 200, "admin restores the title");
      },
    );

    await t.step("expand and query strings", async () => {
      const rows = await adminRows(s, admin, "notes");
      const tags = await adminRows(s, admin, "tags");
      const aliceTag = tags.find((x) => x.owner === SHARED)!;
      const mine = rows.filter((r) => r.owner === SHARED);
      const bobs = rows.filter((r) => r.owner === BOB);
      for (const row of mine) {
        for (const q of ["?expand=tag", "?&expand=tag", "?expand=tag&"]) {
          const r = await s.request(
            "GET",
            `/api/v1/entities/notes/${row.id}${q}`,
            {
              token: w.alice.token,
            },
          );
          status(r, 200, `alice gets her note${q}`);
          eq(
            r.data.expand?.tag?.id,
            row.tag === aliceTag.id ? aliceTag.id : undefined,
            `expanded tag of ${row.title}${q}`,
          );
          // Mallory (same id) first warms, then alice again.
          const m = await s.request(
            "GET",
            `/api/v1/entities/notes/${row.id}${q}`,
            {
              token: w.mallory.token,
            },
          );
          status(m, 404, `mallory gets alice's note${q}`);
        }
      }
      // A `?` encoded is part of the id, never a query string.
      for (const who of [w.alice, w.bob, w.mallory]) {
        for (const row of [mine[0], bobs[0]]) {
          const r = await s.request(
            "GET",
            `/api/v1/entities/notes/${row.id}%3Fexpand=tag`,
            { token: who.token },
          );
          status(r, [400, 404], `${who.name}: %3F in the id`);
          const bare = await s.request(
            "GET",
            `/api/v1/entities/notes/${row.id}?`,
            {
              token: who.token,
            },
          );
          status(bare, seesNote(row, who) ? 200 : 404, `${who.name}: a bare ?`);
          eq(bare.data?.expand, undefined, "no expand without asking");
        }
      }
      // A list's query string with and without `?`.
      for (
        const path of ["/api/v1/entities/notes", "/api/v1/entities/notes?"]
      ) {
        const r = await s.request("GET", path, { token: w.alice.token });
        status(r, 200, path);
        eq(ids(r.data.items), ids(mine), `alice's list at ${path}`);
      }
      const f = await s.request(
        "GET",
        `/api/v1/entities/notes?filter=${
          encodeURIComponent(`owner == "${BOB}"`)
        }`,
        { token: w.alice.token },
      );
      status(f, 200, "alice filters for bob's");
      eq(f.data.items, [], "a filter never widens the rule");
    });

    await t.step(
      "rules reading the caller's record or the request",
      async () => {
        await schema(s, admin, {
          name: "boards",
          type: "base",
          fields: [{ name: "team", type: "string" }, {
            name: "kind",
            type: "string",
          }],
          rules: {
            list: custom("record.team == auth.user.team"),
            get: custom("record.kind == req.query.kind && auth.id != ''"),
          },
        });
        const made: Rec[] = [];
        for (const team of ["red", "blue"]) {
          for (const kind of ["a", "b"]) {
            const r = await s.request("POST", "/api/v1/entities/boards", {
              token: admin,
              body: { team, kind },
            });
            status(r, 201, "board");
            made.push(r.data as Rec);
          }
        }
        const listAs = async () => {
          const r = await s.request("GET", "/api/v1/entities/boards", {
            token: w.alice.token,
          });
          status(r, 200, "alice lists boards");
          return (r.data.items as Rec[]).map((x) => x.team);
        };
        for (const team of ["red", "blue", "red", "", "blue"]) {
          const u = await s.request(
            "PATCH",
            `/api/v1/entities/users/${SHARED}`,
            {
              token: admin,
              body: { team },
            },
          );
          status(u, 200, `alice joins ${team}`);
          eq(await listAs(), team ? [team, team] : [], `alice in ${team}`);
        }
        for (const kind of ["a", "b", "a", "c"]) {
          for (const row of made) {
            const r = await s.request(
              "GET",
              `/api/v1/entities/boards/${row.id}?kind=${kind}`,
              { token: w.alice.token },
            );
            status(
              r,
              row.kind === kind ? 200 : 404,
              `get ${row.kind}?kind=${kind}`,
            );
          }
        }
      },
    );

    await t.step(
      "{ as } from a script, past the callers kept per entity",
      async () => {
        const notes = s.app.schemas.get("notes")!;
        const rows = await adminRows(s, admin, "notes");
        const target = rows.find((r) => r.owner === SHARED)!;
        const asOf = (who: Who): AuthValue => ({
          id: who.id,
          entity: who.entity,
          type: who.type,
          user: who.type === "guest" ? null : { id: who.id },
        });
        for (let i = 0; i <= MAX_CALLERS; i++) {
          const id = `ghost-${i}`;
          const got = await notes.read(target.id, {
            as: { id, entity: "users", type: "user", user: { id } },
          });
          eq(got, undefined, `ghost ${i}`);
        }
        for (const who of everyone(w)) {
          const list = await notes.list("limit=500", { as: asOf(who) });
          eq(
            ids(list.items as Rec[]),
            ids(rows.filter((r) => seesNote(r, who))),
            `${who.name} by { as }`,
          );
          eq(
            (await notes.read(target.id, { as: asOf(who) }))?.id,
            seesNote(target, who) ? target.id : undefined,
            `${who.name} reads alice's note by { as }`,
          );
          await checkNotes(w, who);
        }
      },
    );

    await t.step("a view whose query changes under the same rule", async () => {
      const rule = custom('auth.entity == "users" && record.owner == auth.id');
      await schema(s, admin, {
        name: "note_view",
        type: "view",
        view_query: "SELECT id, owner, title FROM notes",
        rules: { list: rule, get: rule },
      });
      const byOwner = (row: Rec, who: Who) =>
        who.entity === "users" && row.owner === who.id;
      for (const who of [w.alice, w.mallory, w.bob]) {
        await checkNotes(w, who, byOwner, "note_view");
      }
      // The same columns, another meaning: `owner` is now the title.
      const rows = await adminRows(s, admin, "notes");
      const renamed = rows.find((r) => r.owner === BOB)!;
      status(
        await s.request("PATCH", `/api/v1/entities/notes/${renamed.id}`, {
          token: admin,
          body: { title: SHARED },
        }),
        200,
        "a title that is alice's id",
      );
      const r = await s.request("PATCH", "/api/v1/schemas/note_view", {
        token: admin,
        body: {
          view_query: "SELECT id, title AS owner, owner AS title FROM notes",
        },
      });
      status(r, 200, "change the view's query");
      for (const who of [w.alice, w.mallory, w.bob]) {
        await checkNotes(w, who, byOwner, "note_view");
      }
      eq(
        ids(
          (await adminRows(s, admin, "note_view")).filter((x) =>
            x.owner === SHARED
          ),
        ),
        [renamed.id],
        "alice's row through the changed view",
      );
      status(
        await s.request("DELETE", "/api/v1/schemas/note_view", {
          token: admin,
        }),
        204,
        "drop the view",
      );
    });

    await t.step(
      "a json field under a renamed field's name, the rule unchanged",
      async () => {
        const callers = [w.alice, w.mallory, w.guest, w.bob];
        for (const who of callers) await checkNotes(w, who); // warm
        const before = (await s.request("GET", "/api/v1/schemas/notes", {
          token: admin,
        })).data;
        const ownerField = (before.fields as { id: string; name: string }[])
          .find((f) => f.name === "owner")!;
        const r = await s.request("PATCH", "/api/v1/schemas/notes", {
          token: admin,
          body: {
            fields: [
              { id: ownerField.id, name: "author" },
              { name: "owner", type: "json" },
            ],
          },
        });
        status(r, 200, "rename owner, add a json owner");
        eq(r.data.rules.list.expr, NOTES_RULE, "the rule's text is unchanged");
        // The json owner: alice's id on bob's rows, bob's id as a list on alice's.
        const rows = await adminRows(s, admin, "notes");
        for (const row of rows) {
          const owner = row.author === BOB
            ? SHARED
            : row.author === SHARED
            ? [BOB]
            : row.author;
          const u = await s.request(
            "PATCH",
            `/api/v1/entities/notes/${row.id}`,
            {
              token: admin,
              body: { owner },
            },
          );
          status(u, 200, "set the json owner");
        }
        for (const who of [...callers, w.twin]) await checkNotes(w, who);
        const alices = (await adminRows(s, admin, "notes")).filter((x) =>
          x.owner === SHARED
        );
        eq(alices.length, 4, "alice owns bob's four rows now");
      },
    );

    await t.step(
      "the entity deleted and created anew under its name",
      async () => {
        for (const who of [w.alice, w.bob, w.guest]) await checkNotes(w, who);
        status(
          await s.request("DELETE", "/api/v1/schemas/notes", { token: admin }),
          204,
          "drop notes",
        );
        const rule = custom(NOTES_RULE);
        await schema(s, admin, {
          name: "notes",
          type: "base",
          fields: [
            { name: "kind", type: "string" },
            { name: "title", type: "string" },
            { name: "owner", type: "text" },
          ],
          rules: { list: rule, get: rule, update: rule, delete: rule },
        });
        // New rows: another type of column, other owners.
        for (const owner of [BOB, SHARED, "", w.adminId]) {
          for (const kind of ["public", "private"]) {
            const c = await s.request("POST", "/api/v1/entities/notes", {
              token: admin,
              body: { owner, kind, title: `${kind} of ${owner}` },
            });
            status(c, 201, "new note");
          }
        }
        for (const who of [...everyone(w), w.twin]) await checkNotes(w, who);
      },
    );
  } finally {
    await s.close();
  }
});
