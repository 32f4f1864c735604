/**
 * What record hooks do to a write: a before-hook's changes are saved and
 * validated again (an invalid change is a 400, server-set keys stay); the
 * access rule judges the record as the hook left it; `app.error(status,
 * message)` rejects with that status and message and leaves no row and no
 * file; writes through `e.db` commit or roll back with the record; any other
 * throw is a 500 without its message; after-hooks see the committed record,
 * and their throws are logged with the script's name, the response intact.
 *
 * "A rejected write leaves nothing" through what a client can trigger:
 * record operations nested in a before-hook (`app.entities` joins the
 * write) and their after-hooks, file removals and session revocations, work
 * a hook leaves running after it returns, and hooks for a caller the rule
 * refuses (none runs).
 *
 * A before-hook's changes are validated again and cannot write what the
 * server owns (id, created, file names) nor an unhashed password; a
 * password changed inside a hook does not stop the database; a caught
 * failure of a nested record operation leaves the write going.
 *
 * @module
 */

import assert from "node:assert/strict";
import { forEachDb, type Reply } from "./_server.ts";
import { join } from "node:path";
import {
  entityDir,
  exists,
  file,
  filesSnapshot,
  sendForm,
} from "./_files_fixtures.ts";
import { poll, settlesWithin } from "./_wait.ts";
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

/** What the scripts noted in `globalThis.__probe`, read through a route. */
async function probe(s: { request: (m: string, p: string) => Promise<Reply> }) {
  const r = await s.request("GET", "/api/probe");
  assert.equal(r.status, 200, r.text);
  return r.data as Record<string, unknown>;
}

const PROBE_ROUTE = `
  globalThis.__probe = {};
  app.route("GET", "/api/probe", () => globalThis.__probe);
`;

const text = (name: string) => ({ name, type: "string" });

/**
 * `things` creates a note through app.entities (joins the write); the
 * note's after-hook records that it ran, and then the thing is refused
 * when its title is "reject".
 */
const NESTED = `
export default (app) => {
  ${PROBE_ROUTE}
  app.onRecord("afterCreate", "notes", (e) => {
    globalThis.__probe.noteAfter = (globalThis.__probe.noteAfter ?? 0) + 1;
  });
  app.onRecord("beforeCreate", "things", async (e) => {
    await app.entities.get("notes").create({ t: "for " + e.record.title });
    if (e.record.title === "reject") throw app.error(409, "Cannot create thing: refused");
  });
};
`;

// Found in review (medium, fixed; the test fails without the fix): an Entity operation nested in a before-hook runs its own
// after-hooks at once (lib/records/entity.ts create/update/remove call
// `hooks.after` as soon as their statement returns), while the outer write
// is still open. When the outer write is then refused, the nested row rolls
// back but its after-hooks already ran (webhooks sent, emails, counters,
// app.log lines, files removed): the docs' "a rejected write leaves
// nothing: no side effect of the hook" does not hold. Fix: inside a write
// scope (lib/records/write_scope.ts), queue nested after-hooks (and the
// nested file removals / revocations, see below) on the scope and run them
// only after the outermost write committed; drop them on rollback.
forEachDb(
  "hooks: a refused write runs no after-hook of a record it created inside",
  async (t, db) => {
    await withScripts(db, { "nested.js": NESTED }, async (s) => {
      await makeEntity(s, { name: "notes", fields: [text("t")] });
      await makeEntity(s, { name: "things", fields: [text("title")] });
      await t.step("an accepted write runs it once", async () => {
        const r = await s.request("POST", "/api/v1/entities/things", {
          body: { title: "fine" },
        });
        assert.equal(r.status, 201, r.text);
        assert.equal((await probe(s)).noteAfter, 1);
      });
      await t.step({
        name: "a refused write leaves no row and ran no after-hook",
        fn: async () => {
          const r = await s.request("POST", "/api/v1/entities/things", {
            body: { title: "reject" },
          });
          assert.equal(r.status, 409, r.text);
          assert.equal(await rowCount(s, "notes"), 1, "the note rolled back");
          assert.equal(
            (await probe(s)).noteAfter,
            1,
            "after-hook of a rolled-back note ran",
          );
        },
      });
    });
  },
);

/** A nested record's after-hook that uses its own `e.db`. */
const NESTED_DB = `
export default (app) => {
  ${PROBE_ROUTE}
  app.onRecord("afterCreate", "notes", async (e) => {
    const rows = await e.db.query('SELECT COUNT(*) AS n FROM "notes"');
    globalThis.__probe.seen = Number(rows[0].n);
  });
  app.onRecord("beforeCreate", "things", async (e) => {
    await app.entities.get("notes").create({ t: "for " + e.record.title });
  });
};
`;

// Found in review (high on SQLite: one request stops the database for good, fixed; the test fails without the fix): the
// after-hook of a record created inside a before-hook gets as `e.db` the
// app's storage itself (lib/records/entity_hooks.ts after(): `db`, the base
// storage), not the write it runs in. On SQLite a statement issued while a
// transaction is open waits for it to end, and the transaction waits for
// this hook: the request never answers and every later write and read of
// the app waits behind it (health included). On PostgreSQL the after-hook
// reads outside the write (it does not see the uncommitted rows). Any
// client whose write has such a hook triggers it. Fix: as above, defer
// nested after-hooks to the outermost commit; at the least give them
// `current(db)`.
forEachDb(
  "hooks: a nested record's after-hook using e.db never hangs the database",
  async (t, db) => {
    await withScripts(db, { "nested_db.js": NESTED_DB }, async (s) => {
      await makeEntity(s, { name: "notes", fields: [text("t")] });
      await makeEntity(s, { name: "things", fields: [text("title")] });
      await t.step({
        name: "the write answers and the database still does",
        fn: async () => {
          const r = await settlesWithin(
            s.request("POST", "/api/v1/entities/things", {
              body: { title: "x" },
            }),
            5000,
          );
          assert.notEqual(r, "timeout", "the write hung");
          assert.equal((r as Reply).status, 201, (r as Reply).text);
          const h = await settlesWithin(
            s.request("GET", "/api/v1/health"),
            3000,
          );
          assert.notEqual(h, "timeout", "the database hung");
        },
      });
    });
  },
);

/** Deleting a thing removes its attachment record (a file) first. */
const NESTED_FILES = `
export default (app) => {
  app.onRecord("beforeDelete", "things", async (e) => {
    const atts = app.entities.get("atts");
    const list = await atts.list('filter=' + encodeURIComponent('thing == "' + e.record.id + '"'));
    for (const a of list.items) await atts.remove(a.id);
    if (e.record.title === "keep") throw app.error(409, "Cannot delete thing: kept");
  });
};
`;

// Found in review (medium, fixed; the test fails without the fix): a record removed inside a before-hook has its files
// deleted from disk at once (Entity.remove → env.files.remove right after
// deleteRecord), before the outer write commits. When the outer delete is
// refused (a later hook, the rule, a constraint), the attachment row rolls
// back but its file is gone: the record points to a missing file. The same
// holds for an update that replaces a file, and for a nested password
// change (its sessions are revoked though the change rolled back). Fix:
// queue file removals and revocations of nested operations on the write
// scope and run them after the outermost commit.
forEachDb(
  "hooks: a refused delete leaves the files of records removed inside it",
  async (t, db) => {
    await withScripts(db, { "files.js": NESTED_FILES }, async (s) => {
      await makeEntity(s, { name: "things", fields: [text("title")] });
      await makeEntity(s, {
        name: "atts",
        fields: [text("thing"), { name: "doc", type: "file" }],
      });
      const thing = await s.request("POST", "/api/v1/entities/things", {
        body: { title: "keep" },
      });
      assert.equal(thing.status, 201, thing.text);
      const form = new FormData();
      form.set("thing", thing.data.id);
      form.set("doc", new File(["hello"], "a.txt", { type: "text/plain" }));
      const att = await sendForm(s, "POST", "/api/v1/entities/atts", form, {
        token: await s.adminToken(),
      });
      assert.equal(att.status, 201, att.text);
      const stored = join(entityDir(s, "atts"), att.data.doc);
      assert.ok(await exists(stored), "the file is stored");
      await t.step({
        name: "the attachment and its file survive",
        fn: async () => {
          const r = await s.request(
            "DELETE",
            `/api/v1/entities/things/${thing.data.id}`,
          );
          assert.equal(r.status, 409, r.text);
          assert.equal(
            await rowCount(s, "atts"),
            1,
            "the attachment rolled back",
          );
          assert.ok(await exists(stored), "its file was deleted anyway");
        },
      });
    });
  },
);

/** A hook that leaves work running after it returns. */
const LATE = `
export default (app) => {
  ${PROBE_ROUTE}
  app.onRecord("beforeCreate", "things", (e) => {
    if (e.record.title !== "late") return;
    setTimeout(async () => {
      try {
        await app.db.run('INSERT INTO "late" ("id", "created", "updated", "t") VALUES (?, ?, ?, ?)',
          [crypto.randomUUID(), "2020-01-01T00:00:00.000Z", "2020-01-01T00:00:00.000Z", "late"]);
        globalThis.__probe.late = "ran";
      } catch (err) {
        globalThis.__probe.late = "failed: " + err.message;
      }
    }, 300);
  });
  app.onRecord("beforeCreate", "things", async (e) => {
    if (e.record.title !== "slow-reject") return;
    await new Promise((r) => setTimeout(r, 800));
    throw app.error(409, "Cannot create thing: refused after a while");
  });
};
`;

// Found in review (high, fixed; the test fails without the fix): the write scope (AsyncLocalStorage in
// lib/records/write_scope.ts) follows everything a before-hook starts,
// timers and un-awaited promises included, and outlives the write. A
// statement `app.db` issues from a timer set in a hook runs on the
// transaction handle of a write that has ended, that is on the connection
// that write used (SQLite: the one connection; PostgreSQL: the lane's
// single-connection client), inside whatever transaction another request
// holds there at that moment. Here the late INSERT joins a guest's create
// that a hook refuses a moment later and is rolled back with it, on both
// databases; a failing late statement would likewise abort the other
// request's transaction, and a late statement bypasses SQLite's write
// serialisation. Fix: give the scope an end — `inWrite` marks it done in a
// `finally` when the hooks return, and `current()` returns `base` for a
// finished scope (so late work runs on its own, as outside a hook).
forEachDb(
  "hooks: work a hook leaves running after the write never lands in another write",
  async (t, db) => {
    await withScripts(db, { "late.js": LATE }, async (s) => {
      await makeEntity(s, { name: "late", fields: [text("t")] });
      await makeEntity(s, { name: "things", fields: [text("title")] });
      await t.step({
        name: "the late statement runs on its own and stays",
        fn: async () => {
          const a = await s.request("POST", "/api/v1/entities/things", {
            body: { title: "late" },
          });
          assert.equal(a.status, 201, a.text);
          // Another client's write is open (its hook waits) when the timer fires.
          const b = await s.request("POST", "/api/v1/entities/things", {
            body: { title: "slow-reject" },
          });
          assert.equal(b.status, 409, b.text);
          await poll("the late statement", async () => (await probe(s)).late);
          assert.equal((await probe(s)).late, "ran");
          assert.equal(await rowCount(s, "late"), 1, "the late row was lost");
        },
      });
    });
  },
);

/** A hook with a side effect and a verdict of its own. */
const BEFORE_RULE = `
export default (app) => {
  ${PROBE_ROUTE}
  app.onRecord("beforeCreate", "owned", (e) => {
    globalThis.__probe.ran = (globalThis.__probe.ran ?? 0) + 1;
    if (e.record.title === "taken") {
      throw app.error(409, "Cannot create: title taken by " + e.record.secretRef);
    }
  });
};
`;

// Found in review (low, fixed; the test fails without the fix): on create, before-hooks run before the entity's add rule
// when that rule reads the record (lib/records/crud.ts insertRecord: the
// `before` step, then `opts.check`, the rule). The docs said hooks run
// "after validation and the access rule". So a caller the rule refuses
// still runs the hooks: their side effects outside the database (a sent
// mail, a webhook, an in-memory counter, a log line) happen, and a hook's
// own refusal (its status and message) answers instead of the 401/403.
// Update and delete are checked against the stored record first (the
// `where`/`keep` step), so only create is affected. Fix: run the add rule's
// check once before the hooks (on the record as sent) and again after them
// (on the record as changed), or document that create hooks run first.
forEachDb(
  "hooks: a create the add rule refuses runs no before-hook",
  async (t, db) => {
    await withScripts(db, { "rule.js": BEFORE_RULE }, async (s) => {
      await makeEntity(s, {
        name: "owned",
        fields: [text("title"), text("owner"), text("secretRef")],
        rules: {
          list: { mode: "public", expr: "" },
          get: { mode: "public", expr: "" },
          add: {
            mode: "custom",
            expr: 'auth.id != "" && record.owner == auth.id',
          },
          update: { mode: "public", expr: "" },
          delete: { mode: "public", expr: "" },
        },
      });
      await t.step({
        name: "a guest's refused create",
        fn: async () => {
          const r = await s.request("POST", "/api/v1/entities/owned", {
            body: { title: "taken", owner: "someone", secretRef: "x" },
          });
          assert.equal(r.status, 401, r.text);
          assert.equal(
            (await probe(s)).ran,
            undefined,
            "the hook ran for a refused caller",
          );
        },
      });
    });
  },
);

/** A hook that tries to write what the server owns, on every create. */
const SERVER_KEYS = `
export default (app) => {
  app.onRecord("beforeCreate", "docs", (e) => {
    e.record.id = "00000000-0000-7000-8000-000000000001";
    e.record.created = "2000-01-01T00:00:00.000Z";
    e.record.updated = "2000-01-01T00:00:00.000Z";
    e.record.doc = "../../../../etc/passwd";
    e.record.t = "hooked";
  });
  app.onRecord("beforeCreate", "members", (e) => {
    e.record.password = "set-by-hook-123";
  });
  app.onRecord("beforeUpdate", "docs", (e) => {
    if (e.record.t === "bad") e.record.nope = 1;
    if (e.record.t === "long") e.record.t = 5;
  });
};
`;

forEachDb(
  "hooks: a before-hook's changes cannot set server-owned values",
  async (t, db) => {
    await withScripts(db, { "keys.js": SERVER_KEYS }, async (s) => {
      await makeEntity(s, {
        name: "docs",
        fields: [text("t"), { name: "doc", type: "file" }],
      });
      await makeEntity(s, { name: "members", type: "auth", fields: [] });
      await t.step(
        "id, created, updated and file names stay the server's",
        async () => {
          const r = await s.request("POST", "/api/v1/entities/docs", {
            body: { t: "a" },
          });
          assert.equal(r.status, 201, r.text);
          assert.equal(r.data.t, "hooked");
          assert.notEqual(r.data.id, "00000000-0000-7000-8000-000000000001");
          assert.notEqual(r.data.created, "2000-01-01T00:00:00.000Z");
          assert.equal(r.data.doc ?? null, null);
          const [row] = await s.app.storage.query(`SELECT * FROM "docs"`);
          assert.equal(row.doc ?? null, null, "stored file name");
        },
      );
      await t.step("a password a hook sets is stored hashed", async () => {
        const r = await s.request("POST", "/api/v1/entities/members", {
          body: { email: "m@example.com", password: "client-pass-123" },
        });
        assert.equal(r.status, 201, r.text);
        const [row] = await s.app.storage.query(
          `SELECT "password" FROM "members"`,
        );
        assert.notEqual(row.password, "set-by-hook-123");
        assert.notEqual(row.password, "client-pass-123");
        assert.match(String(row.password), /^scrypt\$/);
        const login = await s.request("POST", "/api/v1/auth/members/login", {
          body: { identity: "m@example.com", password: "set-by-hook-123" },
        });
        assert.equal(login.status, 200, login.text);
      });
      await t.step("changes are validated again (400, not 500)", async () => {
        const rec = await s.app.schemas.get("docs")!.create({ t: "x" });
        for (const t of ["bad", "long"]) {
          const r: Reply = await s.request(
            "PATCH",
            `/api/v1/entities/docs/${rec.id}`,
            {
              body: { t },
            },
          );
          assert.equal(r.status, 400, r.text);
        }
      });
    });
  },
);

/** Changing a thing changes its owner's password, in the same write. */
const NESTED_PASSWORD = `
export default (app) => {
  app.onRecord("beforeUpdate", "things", async (e) => {
    if (e.record.reset) {
      await app.entities.get("members").update(e.record.owner, { password: "reset-by-hook-1" });
    }
    if (e.record.refuse) throw app.error(409, "Cannot update thing: refused");
  });
};
`;

// Found in review (high on SQLite: one request stops the database for good, fixed; the test fails without the fix): a
// password changed by an Entity operation nested in a before-hook ends the
// user's sessions through `EntityEnv.passwordChanged` →
// Revocations.revokeUser, which writes `mb_cutoffs` in a transaction of its
// own on the app's storage (lib/auth/revocation.ts), not in the write the
// hook runs in. On SQLite that transaction waits for the open one, which
// waits for the hook: the request never answers, and the whole database
// with it. On PostgreSQL the revocation commits on its own even when the
// outer write is refused (sessions end for a password change that never
// happened). Fix: queue the revocation on the write scope and run it after
// the outermost commit (with the nested after-hooks and file removals).
forEachDb(
  "hooks: a password changed inside a before-hook never hangs the database",
  async (t, db) => {
    await withScripts(db, { "pw.js": NESTED_PASSWORD }, async (s) => {
      await makeEntity(s, { name: "members", type: "auth", fields: [] });
      await makeEntity(s, {
        name: "things",
        fields: [
          text("owner"),
          { name: "reset", type: "bool" },
          { name: "refuse", type: "bool" },
        ],
      });
      const m = await userOf(s, "members", "victim@example.com");
      const thing = await s.app.schemas.get("things")!.create({ owner: m.id });
      await t.step({
        name: "a refused write answers and leaves the user's sessions alone",
        fn: async () => {
          const r = await settlesWithin(
            s.request("PATCH", `/api/v1/entities/things/${thing.id}`, {
              body: { reset: true, refuse: true },
            }),
            5000,
          );
          assert.notEqual(r, "timeout", "the write hung");
          assert.equal((r as Reply).status, 409, (r as Reply).text);
          const h = await settlesWithin(
            s.request("GET", "/api/v1/health"),
            3000,
          );
          assert.notEqual(h, "timeout", "the database hung");
          const me = await s.request(
            "GET",
            `/api/v1/entities/members/${m.id}`,
            {
              token: m.token,
            },
          );
          assert.equal(
            me.status,
            200,
            "the session ended for a password change that rolled back",
          );
        },
      });
    });
  },
);

/** "Insert or ignore" of a tag in a hook: a duplicate is caught and ignored. */
const TAGS = `
export default (app) => {
  app.onRecord("beforeCreate", "posts", async (e) => {
    try {
      await app.entities.get("tags").create({ name: e.record.tag });
    } catch { /* the tag exists */ }
  });
};
`;

// Found in review (medium, PostgreSQL only, fixed; the test fails without the fix): a record operation nested in a
// before-hook joins the write without a savepoint (lib/records/
// write_scope.ts current(): `transaction: (fn) => fn(tx)`). When it fails
// and the hook catches the error (the usual "create the tag unless it
// exists"), PostgreSQL has already aborted the whole transaction: the
// client's write then fails, answered as a 409 "record must be unique"
// about a field it never sent; on SQLite the same script works (a failed
// statement undoes only itself, but a nested operation of several
// statements keeps its first ones). Fix: run a nested `transaction` as a
// savepoint of the write (postgres.js `tx.savepoint(fn)`, SQLite
// `SAVEPOINT`/`ROLLBACK TO`), so a caught failure undoes exactly the nested
// operation on both databases.
forEachDb(
  "hooks: a caught failure of a nested record operation leaves the write going",
  async (t, db) => {
    await withScripts(db, { "tags.js": TAGS }, async (s) => {
      await makeEntity(s, {
        name: "tags",
        fields: [{ name: "name", type: "string", unique: true }],
      });
      await makeEntity(s, { name: "posts", fields: [text("tag")] });
      await t.step({
        name: "the second post with the same tag is created",
        fn: async () => {
          for (const i of [1, 2]) {
            const r = await s.request("POST", "/api/v1/entities/posts", {
              body: { tag: "news" },
            });
            assert.equal(r.status, 201, `post ${i}: ${r.text}`);
          }
        },
      });
    });
  },
);
