/**
 * The example scripts of `examples/scripts/`, loaded as the scripts
 * directory of a server that has the entities they describe: the rule
 * helper lets only colleagues post, the slug follows the title, changes and
 * deletions leave audit rows written in the same transaction (none for a
 * refused write), the stats route counts as the caller, and the nightly
 * cleanup deletes old audit rows.
 *
 * The cron job is not waited for: the test builds the scripts' extension
 * set again (`activate`, as a load does), checks the job's name and
 * schedule, and calls the job's function the way the cron runner would.
 *
 * @module
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { forEachDb, type Reply, startServer } from "./_server.ts";
import { makeEntity, rowCount, userOf } from "./_extend_fixtures.ts";
import { activate } from "../lib/extend/extension_set.ts";
import { importScripts } from "../lib/extend/load.ts";

const EXAMPLES = fileURLToPath(new URL("../examples/scripts", import.meta.url));

function ok(r: Reply, status: number, what: string): Reply {
  assert.equal(r.status, status, `${what}: ${r.text.slice(0, 300)}`);
  return r;
}

const str = (name: string, required = false) => ({
  name,
  type: "string",
  required,
});

forEachDb("examples: the example scripts do their jobs", async (t, db) => {
  const s = await startServer(db, { scriptsDir: EXAMPLES });
  try {
    await makeEntity(s, {
      name: "users",
      type: "auth",
      rules: { get: { mode: "auth", expr: "" } },
    });
    const visible = 'record.status == "published" || record.author == auth.id';
    const mine = { mode: "custom", expr: "record.author == auth.id" };
    await makeEntity(s, {
      name: "posts",
      fields: [str("title", true), str("slug"), str("status"), str("author")],
      rules: {
        list: { mode: "custom", expr: visible },
        get: { mode: "custom", expr: visible },
        add: {
          mode: "custom",
          expr:
            'emailDomain(auth.user.email) == "example.com" && record.author == auth.id',
        },
        update: mine,
        delete: mine,
      },
    });
    await makeEntity(s, {
      name: "audit_log",
      fields: ["entity", "record_id", "action", "actor", "changes"].map((n) =>
        str(n)
      ),
      rules: {},
    });
    const ada = await userOf(s, "users", "ada@Example.com");
    const bob = await userOf(s, "users", "bob@example.com");
    const eve = await userOf(s, "users", "eve@elsewhere.org");
    const admin = await s.adminToken();
    const post = (token: string, body: Record<string, unknown>) =>
      s.request("POST", "/api/v1/entities/posts", { token, body });
    const patch = (token: string, id: string, body: Record<string, unknown>) =>
      s.request("PATCH", `/api/v1/entities/posts/${id}`, { token, body });
    const audit = async () =>
      (await s.app.schemas.get("audit_log")!.list("sort=created")).items;
    let id = "";

    await t.step("helpers.ts: only colleagues may post", async () => {
      const body = (u: { id: string }) => ({
        title: "Hello, World!",
        slug: "my-own-slug",
        status: "draft",
        author: u.id,
      });
      id = ok(await post(ada.token, body(ada)), 201, "ada").data.id;
      ok(await post(eve.token, body(eve)), 403, "eve, another domain");
    });

    await t.step("slug.ts: the slug follows the title", async () => {
      const get = async () =>
        (await s.request("GET", `/api/v1/entities/posts/${id}`, {
          token: ada.token,
        })).data;
      assert.equal((await get()).slug, "hello-world");
      const r = ok(
        await patch(ada.token, id, { title: "Crème brûlée, été" }),
        200,
        "retitle",
      );
      assert.equal(r.data.slug, "creme-brulee-ete");
      ok(
        await patch(ada.token, id, { status: "published" }),
        200,
        "publish",
      );
      assert.deepEqual(
        [(await get()).slug, (await get()).status],
        ["creme-brulee-ete", "published"],
      );
    });

    await t.step(
      "audit.ts: one row per change, in the write's transaction",
      async () => {
        // audit.ts runs before slug.ts (name order): it sees the new title,
        // not yet the slug derived from it.
        const rows = await audit();
        assert.deepEqual(rows.map((r) => [r.entity, r.record_id, r.action]), [
          ["posts", id, "update"],
          ["posts", id, "update"],
        ]);
        assert.equal(rows[0].actor, `user:users:${ada.id}`);
        // The two PATCHes may share a millisecond, so "created" may tie:
        // their rows are compared in either order.
        const changes = rows.map((r) => JSON.parse(String(r.changes)))
          .sort((a, b) => Object.keys(a)[0] < Object.keys(b)[0] ? -1 : 1);
        assert.deepEqual(changes, [
          { status: ["draft", "published"] },
          { title: ["Hello, World!", "Crème brûlée, été"] },
        ]);
        ok(await patch(ada.token, id, { title: null }), 400, "invalid change");
        ok(await patch(bob.token, id, { title: "x" }), 404, "not bob's");
        // Refused by the rule on the changed record, after audit.ts wrote its
        // row: the row is rolled back with the write.
        ok(
          await patch(ada.token, id, { author: bob.id }),
          403,
          "giving the post away",
        );
        assert.equal((await audit()).length, 2, "no row for refused writes");
        const extra = ok(
          await post(bob.token, {
            title: "Bye",
            status: "draft",
            author: bob.id,
          }),
          201,
          "bob posts",
        ).data.id;
        ok(
          await s.request("DELETE", `/api/v1/entities/posts/${extra}`, {
            token: admin,
          }),
          204,
          "admin deletes",
        );
        const last = (await audit()).at(-1)!;
        assert.deepEqual([last.action, last.record_id], ["delete", extra]);
        assert.match(String(last.actor), /^admin:mb_admins:/);
      },
    );

    await t.step(
      "stats.ts: counts as the caller, like the records API",
      async () => {
        ok(
          await post(bob.token, {
            title: "Draft",
            status: "draft",
            author: bob.id,
          }),
          201,
          "bob",
        );
        const expected: [string, string | undefined, Record<string, number>][] =
          [
            ["guest", undefined, { total: 1, published: 1, drafts: 0 }],
            ["ada", ada.token, { total: 1, published: 1, drafts: 0 }],
            ["bob", bob.token, { total: 2, published: 1, drafts: 1 }],
            ["admin", admin, { total: 2, published: 1, drafts: 1 }],
          ];
        for (const [who, token, counts] of expected) {
          const r = ok(
            await s.request("GET", "/api/stats/posts", { token }),
            200,
            who,
          );
          assert.deepEqual(r.data, counts, who);
          const api = await s.request(
            "GET",
            "/api/v1/entities/posts?count=true",
            {
              token,
            },
          );
          assert.equal(
            r.data.total,
            api.data.total,
            `${who}: as the API counts`,
          );
        }
        ok(
          await s.request("GET", "/api/stats/posts", { token: "bad" }),
          401,
          "bad token",
        );
      },
    );

    await t.step(
      "cleanup.ts: the nightly job deletes audit rows older than 90 days",
      async () => {
        const day = 86_400_000;
        for (const age of [200, 91, 10]) {
          const at = new Date(Date.now() - age * day).toISOString();
          await s.app.storage.run(
            `INSERT INTO "audit_log" ("id", "created", "updated", "action") VALUES (?, ?, ?, ?)`,
            [crypto.randomUUID(), at, at, `old ${age}`],
          );
        }
        const before = await rowCount(s, "audit_log");
        const set = await activate(s.app, await importScripts(EXAMPLES), []);
        const job = set.crons.find((j) => j.name === "nightly-cleanup");
        assert.ok(job, "cleanup.ts registers its job");
        assert.deepEqual([job.schedule, job.source], [
          "0 3 * * *",
          "cleanup.ts",
        ]);
        await job.fn();
        assert.equal(await rowCount(s, "audit_log"), before - 2);
        const actions = (await audit()).map((r) => r.action);
        assert.ok(actions.includes("old 10") && !actions.includes("old 91"));
        await job.fn();
        assert.equal(
          await rowCount(s, "audit_log"),
          before - 2,
          "nothing more",
        );
      },
    );
  } finally {
    await s.close();
  }
});
