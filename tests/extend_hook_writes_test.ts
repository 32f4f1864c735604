/**
 * What record hooks do to a write: a before-hook's changes are saved and
 * validated again (an invalid change is a 400, server-set keys stay); the
 * access rule judges the record as the hook left it; `app.error(status,
 * message)` rejects with that status and message and leaves no row and no
 * file; writes through `e.db` commit or roll back with the record; any other
 * throw is a 500 without its message; after-hooks see the committed record,
 * and their throws are logged with the script's name, the response intact.
 *
 * @module
 */

import assert from "node:assert/strict";
import { forEachDb, type Reply } from "./_server.ts";
import { file, filesSnapshot, sendForm } from "./_files_fixtures.ts";
import {
  logsOf,
  makeEntity,
  OPEN,
  rowCount,
  userOf,
  withScripts,
} from "./_extend_fixtures.ts";

function ok(r: Reply, status: number, what: string): Reply {
  assert.equal(r.status, status, `${what}: ${r.text.slice(0, 300)}`);
  assert.equal(r.body?.status ?? status, status, `${what}: envelope status`);
  return r;
}

const CHANGE = `
const slugify = (s) => String(s).toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
export default (app) => {
  const set = (e) => {
    if (e.record.title === "make it invalid") e.record.n = "not a number";
    else if (e.record.title === "drop the title") e.record.title = null;
    else e.record.slug = slugify(e.record.title);
    if (e.record.title === "move the id") {
      e.record.id = "another-id";
      e.record.created = "2000-01-01T00:00:00.000Z";
    }
    if (e.record.title === "give it away") e.record.owner = "someone-else";
  };
  app.onRecord("beforeCreate", "posts", set);
  app.onRecord("beforeUpdate", "posts", set);
};
`;

forEachDb(
  "hooks: a before-hook's changes are saved and checked again",
  async (t, db) => {
    await withScripts(db, { "change.js": CHANGE }, async (s) => {
      await makeEntity(s, { name: "members", type: "auth" });
      const own = { mode: "custom", expr: "record.owner == auth.id" };
      await makeEntity(s, {
        name: "posts",
        fields: [
          { name: "title", type: "string", required: true },
          { name: "slug", type: "string" },
          { name: "n", type: "int" },
          { name: "owner", type: "string" },
        ],
        rules: { ...OPEN, add: own, update: own },
      });
      const user = await userOf(s, "members", "ada@example.com");
      const write = (method: string, path: string, body: unknown) =>
        s.request(method, path, { token: user.token, body });
      const stored = async (id: string) =>
        (await s.request("GET", `/api/v1/entities/posts/${id}`)).data;
      let id = "";

      await t.step(
        "create and update: the slug the hook set is stored",
        async () => {
          const r = ok(
            await write("POST", "/api/v1/entities/posts", {
              title: "Hello, World",
              slug: "mine",
              owner: user.id,
            }),
            201,
            "create",
          );
          id = r.data.id;
          assert.equal(r.data.slug, "hello-world");
          assert.equal((await stored(id)).slug, "hello-world");
          const u = ok(
            await write("PATCH", `/api/v1/entities/posts/${id}`, {
              title: "Second Take",
            }),
            200,
            "update",
          );
          assert.equal(u.data.slug, "second-take");
          assert.equal((await stored(id)).slug, "second-take");
        },
      );

      const invalid = [
        { title: "make it invalid", field: "n" },
        { title: "drop the title", field: "title" },
      ];
      for (const c of invalid) {
        await t.step(`an invalid change is a 400 (${c.title})`, async () => {
          const before = await rowCount(s, "posts");
          const r = ok(
            await write("POST", "/api/v1/entities/posts", {
              title: c.title,
              owner: user.id,
            }),
            400,
            "create",
          );
          assert.ok(r.data?.fields?.[c.field], `names ${c.field}: ${r.text}`);
          assert.equal(await rowCount(s, "posts"), before, "no row");
          ok(
            await write("PATCH", `/api/v1/entities/posts/${id}`, {
              title: c.title,
            }),
            400,
            "update",
          );
          assert.equal((await stored(id)).title, "Second Take", "unchanged");
        });
      }

      await t.step("id and created stay the server's", async () => {
        const r = ok(
          await write("POST", "/api/v1/entities/posts", {
            title: "move the id",
            owner: user.id,
          }),
          201,
          "create",
        );
        assert.notEqual(r.data.id, "another-id");
        assert.notEqual(r.data.created, "2000-01-01T00:00:00.000Z");
        const row = await stored(r.data.id);
        assert.equal(row.slug, "move-the-id");
        assert.equal(row.created, r.data.created);
      });

      await t.step(
        "the rule judges the record as the hook left it",
        async () => {
          const before = await rowCount(s, "posts");
          const r = await write("POST", "/api/v1/entities/posts", {
            title: "give it away",
            owner: user.id,
          });
          ok(r, 403, "create");
          assert.equal(await rowCount(s, "posts"), before, "no row");
          const u = await write("PATCH", `/api/v1/entities/posts/${id}`, {
            title: "give it away",
          });
          ok(u, 403, "update");
          assert.equal((await stored(id)).owner, user.id, "owner unchanged");
        },
      );
    });
  },
);

const REJECT = `
export default (app) => {
  const reserved = (e) => {
    if (e.record.title === "reserved") throw app.error(422, "Cannot publish: the title is reserved");
  };
  app.onRecord("beforeCreate", "docs", reserved);
  app.onRecord("beforeUpdate", "docs", reserved);
  app.onRecord("beforeDelete", "docs", (e) => {
    if (e.record.title === "keep") throw app.error(409, "Cannot delete: this document is kept");
  });
};
`;

forEachDb(
  "hooks: app.error rejects a write and leaves no row and no file",
  async (t, db) => {
    await withScripts(db, { "reject.ts": REJECT }, async (s) => {
      await makeEntity(s, {
        name: "docs",
        fields: [{ name: "title", type: "string" }, {
          name: "cover",
          type: "file",
        }],
      });
      const form = (title: string, name: string) => {
        const fd = new FormData();
        fd.append("title", title);
        fd.append("cover", file("bytes of " + name, name, "text/plain"));
        return fd;
      };
      const refused = (r: Reply, status: number, message: string) => {
        ok(r, status, "refused");
        assert.equal(r.error, message);
        assert.equal(r.data, null);
      };
      const RESERVED = "Cannot publish: the title is reserved";

      await t.step("create, JSON", async () => {
        refused(
          await s.request("POST", "/api/v1/entities/docs", {
            body: { title: "reserved" },
          }),
          422,
          RESERVED,
        );
        assert.equal(await rowCount(s, "docs"), 0);
      });

      await t.step("create, multipart with a file", async () => {
        refused(
          await sendForm(
            s,
            "POST",
            "/api/v1/entities/docs",
            form("reserved", "a.txt"),
          ),
          422,
          RESERVED,
        );
        assert.equal(await rowCount(s, "docs"), 0);
        assert.deepEqual(await filesSnapshot(s), [], "no file on disk");
      });

      const kept = ok(
        await sendForm(
          s,
          "POST",
          "/api/v1/entities/docs",
          form("keep", "k.txt"),
        ),
        201,
        "a document to keep",
      ).data;
      const disk = await filesSnapshot(s);
      assert.equal(disk.length, 1);

      await t.step("update, multipart with a new file", async () => {
        refused(
          await sendForm(
            s,
            "PATCH",
            `/api/v1/entities/docs/${kept.id}`,
            form("reserved", "new.txt"),
          ),
          422,
          RESERVED,
        );
        const r = await s.request("GET", `/api/v1/entities/docs/${kept.id}`);
        assert.deepEqual([r.data.title, r.data.cover], ["keep", kept.cover]);
        assert.deepEqual(await filesSnapshot(s), disk, "same files on disk");
      });

      await t.step("delete", async () => {
        refused(
          await s.request("DELETE", `/api/v1/entities/docs/${kept.id}`),
          409,
          "Cannot delete: this document is kept",
        );
        assert.equal(await rowCount(s, "docs"), 1);
        assert.deepEqual(await filesSnapshot(s), disk, "the file stays");
      });
    });
  },
);

const TX = `
const now = () => new Date().toISOString();
export default (app) => {
  app.onRecord("beforeCreate", "orders", async (e) => {
    await e.db.run(
      'INSERT INTO "audit" ("id", "created", "updated", "note", "ref") VALUES (?, ?, ?, ?, ?)',
      [crypto.randomUUID(), now(), now(), "ordered " + e.record.item, e.record.id],
    );
    await e.db.run('UPDATE "stock" SET "count" = "count" - ? WHERE "item" = ?', [e.record.qty, e.record.item]);
    const [row] = await e.db.query('SELECT "count" FROM "stock" WHERE "item" = ?', [e.record.item]);
    if (!row || Number(row.count) < 0) throw app.error(409, "Cannot order: out of stock");
    if (e.record.qty === 3) throw new Error("crashed after writing");
  });
  app.onRecord("beforeDelete", "orders", async (e) => {
    await e.db.run(
      'INSERT INTO "audit" ("id", "created", "updated", "note", "ref") VALUES (?, ?, ?, ?, ?)',
      [crypto.randomUUID(), now(), now(), "cancelled", e.record.id],
    );
    if (e.record.qty === 2) throw app.error(403, "Cannot cancel: already shipped");
  });
};
`;

/** A later script (name order) that vetoes what the first one wrote. */
const VETO = `
export default (app) => {
  app.onRecord("beforeCreate", "orders", (e) => {
    if (e.record.qty === 4) throw app.error(422, "Cannot order: four is unlucky");
  });
};
`;

forEachDb(
  "hooks: e.db writes commit or roll back with the record",
  async (t, db) => {
    await withScripts(db, { "a_tx.js": TX, "z_veto.js": VETO }, async (s) => {
      await makeEntity(s, {
        name: "orders",
        fields: [{ name: "item", type: "string" }, {
          name: "qty",
          type: "int",
        }],
      });
      await makeEntity(s, {
        name: "audit",
        fields: [{ name: "note", type: "string" }, {
          name: "ref",
          type: "string",
        }],
      });
      await makeEntity(s, {
        name: "stock",
        fields: [{ name: "item", type: "string" }, {
          name: "count",
          type: "int",
        }],
      });
      const stock = s.app.schemas.get("stock")!;
      await stock.create({ item: "widget", count: 20 });
      const left = async () =>
        (await stock.list("filter=" + encodeURIComponent('item == "widget"')))
          .items[0].count;
      const state = async () => ({
        orders: await rowCount(s, "orders"),
        audit: await rowCount(s, "audit"),
        left: await left(),
      });
      let order = "";

      await t.step(
        "a write that goes through keeps the hook's writes",
        async () => {
          const r = ok(
            await s.request("POST", "/api/v1/entities/orders", {
              body: { item: "widget", qty: 2 },
            }),
            201,
            "order",
          );
          order = r.data.id;
          assert.deepEqual(await state(), { orders: 1, audit: 1, left: 18 });
          const a = await s.request(
            "GET",
            `/api/v1/entities/audit?filter=${
              encodeURIComponent(`ref == "${order}"`)
            }`,
          );
          assert.deepEqual(a.data.items.map((x: { note: string }) => x.note), [
            "ordered widget",
          ]);
        },
      );

      const failures = [
        { why: "app.error after the writes", qty: 50, status: 409 },
        { why: "a plain throw after the writes", qty: 3, status: 500 },
        { why: "a later script's app.error", qty: 4, status: 422 },
      ];
      for (const f of failures) {
        await t.step(`${f.why}: nothing written anywhere`, async () => {
          const before = await state();
          ok(
            await s.request("POST", "/api/v1/entities/orders", {
              body: { item: "widget", qty: f.qty },
            }),
            f.status,
            "order",
          );
          assert.deepEqual(await state(), before);
        });
      }

      await t.step(
        "a refused delete: the record and no audit row",
        async () => {
          const before = await state();
          ok(
            await s.request("DELETE", `/api/v1/entities/orders/${order}`),
            403,
            "cancel",
          );
          assert.deepEqual(await state(), before);
        },
      );
    });
  },
);

const PLAIN = `
export default (app) => {
  for (const ev of ["beforeCreate", "beforeUpdate", "beforeDelete"]) {
    app.onRecord(ev, "things", (e) => {
      if (e.record.title === "boom") throw new Error("secret detail: password hunter2 in " + ev);
    });
  }
};
`;

forEachDb(
  "hooks: any other throw in a before-hook is a 500 without internals",
  async (_t, db) => {
    await withScripts(db, { "plain.js": PLAIN }, async (s) => {
      await makeEntity(s, {
        name: "things",
        fields: [{ name: "title", type: "string" }],
      });
      const things = s.app.schemas.get("things")!;
      const kept = await things.create({ title: "fine" });
      // Stored as "boom" below the hooks, so that the delete's hook throws.
      await s.app.storage.run(
        'UPDATE "things" SET "title" = ? WHERE "id" = ?',
        [
          "boom",
          kept.id as string,
        ],
      );
      const calls: [string, string, unknown][] = [
        ["POST", "/api/v1/entities/things", { title: "boom" }],
        ["PATCH", `/api/v1/entities/things/${kept.id}`, { title: "boom" }],
        ["DELETE", `/api/v1/entities/things/${kept.id}`, undefined],
      ];
      for (const [method, path, body] of calls) {
        const r = ok(await s.request(method, path, { body }), 500, method);
        assert.ok(
          !/secret|hunter2|plain\.js/.test(r.text),
          `no detail: ${r.text}`,
        );
      }
      assert.equal(await rowCount(s, "things"), 1, "only the library's row");
      // The administrator finds the detail in the system logs.
      const logged = await logsOf(s, "unhandled error");
      const stacks = logged.map((e) => String(e.data?.stack ?? ""));
      assert.ok(
        stacks.some((x) =>
          x.includes("hunter2 in beforeCreate") && x.includes("plain.js")
        ),
        `logged: ${stacks.join("\n---\n").slice(0, 600)}`,
      );
    });
  },
);

const AFTER = `
const seen = [];
export default (app) => {
  app.onRecord("afterCreate", "things", async (e) => {
    const rows = await app.db.query('SELECT "title" FROM "things" WHERE "id" = ?', [e.record.id]);
    seen.push({ id: e.record.id, stored: rows.map((r) => r.title) });
  });
  app.onRecord("afterCreate", "things", () => { throw new Error("after create boom"); });
  app.onRecord("afterCreate", "things", (e) => { seen.push({ third: e.record.id }); });
  app.onRecord("afterUpdate", "things", () => { throw app.error(422, "after update refused"); });
  app.onRecord("afterDelete", "things", async () => { throw new Error("after delete boom"); });
  app.route("GET", "/api/test/seen", () => seen.splice(0));
};
`;

forEachDb(
  "hooks: after-hooks see the commit; their throws are logged, the response stands",
  async (_t, db) => {
    await withScripts(db, { "after.js": AFTER }, async (s) => {
      await makeEntity(s, {
        name: "things",
        fields: [{ name: "title", type: "string" }],
      });
      const r = ok(
        await s.request("POST", "/api/v1/entities/things", {
          body: { title: "t" },
        }),
        201,
        "create",
      );
      const id = r.data.id;
      assert.equal(r.data.title, "t");
      const seen = (await s.request("GET", "/api/test/seen")).data;
      assert.deepEqual(seen, [{ id, stored: ["t"] }, { third: id }]);
      ok(
        await s.request("PATCH", `/api/v1/entities/things/${id}`, {
          body: { title: "u" },
        }),
        200,
        "update",
      );
      ok(
        await s.request("DELETE", `/api/v1/entities/things/${id}`),
        204,
        "delete",
      );
      assert.equal(await rowCount(s, "things"), 0);
      for (
        const [event, error] of [
          ["afterCreate", "after create boom"],
          ["afterUpdate", "after update refused"],
          ["afterDelete", "after delete boom"],
        ]
      ) {
        const lines = await logsOf(s, `${event} hook failed`);
        assert.equal(lines.length, 1, `${event}: one line`);
        assert.equal(lines[0].level, "error");
        assert.deepEqual(lines[0].data, {
          entity: "things",
          script: "after.js",
          error,
        });
      }
    });
  },
);
