/**
 * `@moonbase/client` against a real server, on both databases: records
 * (list, listAll, get, create, update, delete, expand, fields, count,
 * files), errors, batches and the admin services. One server per database;
 * each step makes the records it reads.
 *
 * @module
 */

import { Moonbase, MoonbaseError } from "../client/mod.ts";
import { assert, assertEquals, forEachDb, startServer } from "./_server.ts";
import {
  adminClient,
  clientOf,
  exampleEntities,
  rejection,
} from "./_client_fixtures.ts";

forEachDb("client: records, errors, batch, admin", async (t, db) => {
  const s = await startServer(db, { trustProxy: true });
  try {
    await exampleEntities(s);
    const admin = await adminClient(s);
    const mb = clientOf(s);
    const email = `ada-${db}@example.com`;
    await mb.entity("users").create({
      email,
      password: "correct-horse-1",
      name: "Ada",
    });
    const { user } = await mb.auth("users").login(email, "correct-horse-1");
    assertEquals(mb.authStore.user?.id, user.id);
    assert(mb.authStore.isValid, "the store holds a valid token");

    await t.step("create, get, update, delete", async () => {
      const posts = mb.entity("posts");
      const p = await posts.create({ title: "One", views: 1 });
      assertEquals([p.title, p.status, p.author], ["One", "draft", user.id]);
      const got = await posts.get(p.id, { expand: "author" });
      assertEquals(got.expand?.author?.name, "Ada");
      const only = await posts.get(p.id, { fields: ["id", "title"] });
      assertEquals(Object.keys(only).sort(), ["id", "title"]);
      const changed = await posts.update(p.id, { views: 2 }, {
        expand: ["author"],
      });
      assertEquals([changed.views, changed.expand?.author?.id], [2, user.id]);
      await posts.delete(p.id);
      const gone = await rejection(() => posts.get(p.id));
      assertEquals(gone.status, 404);
      assert(/Cannot find record/.test(gone.message), gone.message);
    });

    await t.step("list: filter, sort, count, cursor; listAll", async () => {
      const posts = mb.entity("posts");
      const tag = `list-${crypto.randomUUID().slice(0, 8)}`;
      for (let i = 0; i < 5; i++) {
        await posts.create({ title: `${tag}-${i}`, views: i });
      }
      const filter = `title.startsWith("${tag}")`;
      const page = await posts.list({
        filter,
        sort: "-views",
        limit: 2,
        count: true,
      });
      assertEquals(page.items.map((p) => p.views), [4, 3]);
      assertEquals([page.total, page.has_more, page.items_count], [5, true, 2]);
      const next = await posts.list({
        filter,
        sort: "-views",
        limit: 2,
        after: page.cursor!,
      });
      assertEquals(next.items.map((p) => p.views), [2, 1]);
      const pages: number[][] = [];
      for await (
        const p of posts.listAll({ filter, sort: ["views"], limit: 2 })
      ) pages.push(p.items.map((r) => r.views ?? -1));
      assertEquals(pages, [[0, 1], [2, 3], [4]]);
    });

    await t.step("files: multipart create, url, file token", async () => {
      await admin.schemas.create({
        name: "scans",
        type: "base",
        fields: [
          { name: "title", type: "string" },
          { name: "image", type: "file" },
          { name: "pages", type: "files" },
        ],
        rules: {
          add: { mode: "auth", expr: "" },
          get: { mode: "auth", expr: "" },
          update: { mode: "auth", expr: "" },
        },
      });
      const scans = (mb as unknown as Moonbase).entity("scans");
      const png = new File([new Uint8Array([137, 80, 78, 71])], "page.png", {
        type: "image/png",
      });
      const rec = await scans.create({
        title: "Scan",
        image: png,
        pages: [new File(["a"], "a.txt"), new File(["b"], "b.txt")],
      });
      assertEquals(rec.title, "Scan");
      assert(typeof rec.image === "string" && rec.image !== "", "stored");
      assertEquals((rec.pages as string[]).length, 2);
      const form = new FormData();
      form.append("title", "Form");
      const viaForm = await scans.create(form);
      assertEquals(viaForm.title, "Form");
      const updated = await scans.update(rec.id, {
        image: new File(["x"], "x.png"),
      });
      assert(updated.image !== rec.image, "the file was replaced");

      const name = String(updated.image);
      const bare = mb.files.url("scans", updated, name);
      assertEquals(bare, `${s.url}/api/files/scans/${name}`);
      const hidden = await fetch(bare);
      await hidden.body?.cancel();
      assertEquals(hidden.status, 404, "no token: hidden");
      const { token } = await mb.files.token();
      const url = mb.files.url("scans", updated, name, { token });
      const res = await fetch(url);
      assertEquals([res.status, await res.text()], [200, "x"]);
      assertEquals(
        mb.files.url("scans", updated, name, { thumb: "100x100" }),
        `${s.url}/api/files/scans/${name}?thumb=100x100`,
      );
      assertEquals(mb.files.url("scans", updated, "image"), "", "a field name");
      assertEquals(mb.files.url("scans", updated, ""), "");
    });

    await t.step("errors: every failure a MoonbaseError", async () => {
      const posts = mb.entity("posts");
      const invalid = await rejection(() =>
        posts.create({ title: "x", views: "many" as unknown as number })
      );
      assertEquals(invalid.status, 400);
      assert("views" in invalid.fields, JSON.stringify(invalid.fields));
      assert(invalid instanceof Error && invalid.name === "MoonbaseError");

      const guest = clientOf(s);
      const denied = await rejection(() =>
        guest.entity("posts").create({ title: "x" })
      );
      assertEquals(denied.status, 401);

      const unknown = await rejection(() =>
        (mb as unknown as Moonbase).entity("nope").list()
      );
      assertEquals(unknown.status, 404);

      const conflict = await rejection(() =>
        mb.entity("users").create({ email, password: "another-pass-1" })
      );
      assertEquals(conflict.status, 409);

      const ac = new AbortController();
      ac.abort();
      const aborted = await rejection(() =>
        posts.list({}, { signal: ac.signal })
      );
      assertEquals([aborted.status, aborted.isAbort], [0, true]);

      const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const port = (closed.addr as Deno.NetAddr).port;
      closed.close();
      const down = new Moonbase(`http://127.0.0.1:${port}`);
      const unreachable = await rejection(() => down.health());
      assertEquals([unreachable.status, unreachable.isAbort], [0, false]);
      assert(/Cannot reach the server/.test(unreachable.message));

      // A token the server refuses is dropped from the store.
      const other = clientOf(s);
      const { token } = await other.auth("users").login(
        email,
        "correct-horse-1",
      );
      const revoked = clientOf(s);
      revoked.authStore.save(token, null);
      await other.auth("users").logout();
      assertEquals(other.authStore.token, "");
      const ended = await rejection(() => revoked.entity("users").list());
      assertEquals(ended.status, 401);
      assertEquals(revoked.authStore.token, "", "the store forgot it");
      guest.close();
      other.close();
      revoked.close();
    });

    await t.step("batch: all or nothing, upsert, files", async () => {
      const posts = mb.entity("posts");
      const old = await posts.create({ title: "old" });
      const gone = await posts.create({ title: "gone" });
      const id = crypto.randomUUID();
      const b = mb.batch();
      b.entity("posts").create({ title: "b1" })
        .entity("posts").update(old.id, { title: "old2" })
        .entity("posts").delete(gone.id)
        .entity("posts").upsert({ id, title: "up" });
      assertEquals(b.size, 4);
      const answers = await b.send();
      assertEquals(answers.map((a) => a.status), [201, 200, 204, 201]);
      assertEquals((await posts.get(id)).title, "up");
      assertEquals((await posts.get(old.id)).title, "old2");

      const failing = mb.batch();
      failing.entity("posts").create({ title: "never" });
      failing.entity("posts").update(crypto.randomUUID(), { title: "x" });
      const err = await rejection(() => failing.send());
      assertEquals(err.status, 404);
      assertEquals((err.data as { index: number }).index, 1);
      const never = await posts.list({ filter: `title == "never"` });
      assertEquals(never.items.length, 0, "nothing applied");

      const withFile = mb.batch();
      withFile.entity("scans").create({
        title: "batched",
        image: new File(["img"], "b.png"),
      });
      const [made] = await withFile.send();
      const rec = made.data as { image: string };
      assert(rec.image.endsWith(".png"), rec.image);

      const empty = await rejection(() => mb.batch().send());
      assertEquals(empty.status, 0);
    });

    await t.step("admin: admins, schemas, logs, settings, health", async () => {
      assertEquals((await admin.health()).status, "ok");
      const schemas = await admin.schemas.list();
      assert(schemas.some((e) => e.name === "posts"), "posts listed");
      const notes = await admin.schemas.create({
        name: "notes",
        type: "base",
        fields: [{ name: "text", type: "string" }],
      });
      assertEquals((await admin.schemas.get("notes")).id, notes.id);
      const changed = await admin.schemas.update("notes", { has_api: false });
      assertEquals(changed.has_api, false);
      const counts = await admin.schemas.counts();
      assertEquals(counts.notes, 0);
      const exported = await admin.schemas.export();
      assert(exported.some((e) => e.name === "notes"), "exported");
      const dry = await admin.schemas.import(
        exported.map((e) =>
          e.name === "notes"
            ? { ...e, fields: [...e.fields, { name: "extra", type: "int" }] }
            : e
        ),
      );
      assertEquals(dry.dry_run, true);
      assertEquals(
        dry.changes.map((c) => [c.entity, c.action]),
        [["notes", "update"]],
      );
      assertEquals(
        (await admin.schemas.get("notes")).fields.some((f) =>
          f.name === "extra"
        ),
        false,
        "a dry run changes nothing",
      );
      await admin.schemas.delete("notes");
      assertEquals(
        (await rejection(() => admin.schemas.get("notes"))).status,
        404,
      );

      const a = await admin.admins.create({
        email: `second-${db}@example.com`,
        password: "second-pass-123",
      });
      assertEquals((await admin.admins.get(a.id)).email, a.email);
      const listed = await admin.admins.list({ limit: 10 });
      assert(listed.items.some((x) => x.id === a.id), "listed");
      await admin.admins.update(a.id, { email: `third-${db}@example.com` });
      await admin.admins.delete(a.id);

      const second = clientOf(s);
      const login = await second.admins.login(
        "admin@example.com",
        s.adminPassword,
      );
      assertEquals(login.user.email, "admin@example.com");
      const refreshed = await second.admins.refresh();
      assert(refreshed.token !== login.token, "a new token");
      assertEquals(second.authStore.token, refreshed.token);
      await second.admins.logout();
      assertEquals(second.authStore.token, "");
      assertEquals(await second.admins.setupRequired(), false);

      const settings = await admin.settings.get();
      assert("app" in settings, "settings have app");
      const renamed = await admin.settings.update({ app: { name: "Client" } });
      assertEquals((renamed.app as { name: string }).name, "Client");
      const testMail = await rejection(() =>
        admin.settings.testMail({ to: "x@example.com" })
      );
      assertEquals(testMail.status, 400, "no SMTP host set");

      const logs = await admin.logs.list({ limit: 5, type: "request" });
      assert(logs.items.length > 0, "request logs");
      assertEquals(
        (await admin.logs.get(logs.items[0].id)).id,
        logs.items[0].id,
      );
      const stats = await admin.logs.stats({ buckets: 4 });
      assert(stats.buckets.length > 0, "buckets");

      const forbidden = await rejection(() => mb.schemas.list());
      assertEquals(forbidden.status, 403);
      const raw = await admin.send<{ status: string }>("GET", "/api/v1/health");
      assertEquals(raw.status, "ok");
    });

    await t.step("aggregate: the request the contract names", async () => {
      // The route lands with the search issue: here, the request it gets.
      const seen: string[] = [];
      const fake = new Moonbase(s.url, {
        fetch: (input) => {
          seen.push(String(input));
          return Promise.resolve(
            Response.json({ status: 200, data: { groups: [] }, error: "" }),
          );
        },
      });
      const r = await fake.entity("posts").aggregate({
        group: ["status", "created:month"],
        count: true,
        sum: "views",
        avg: ["views"],
        filter: "views > 1",
        search: "hello",
      });
      assertEquals(r.groups, []);
      const url = new URL(seen[0]);
      assertEquals(url.pathname, "/api/v1/entities/posts/aggregate");
      assertEquals(Object.fromEntries(url.searchParams), {
        group: "status,created:month",
        count: "true",
        sum: "views",
        avg: "views",
        filter: "views > 1",
        search: "hello",
      });
      fake.close();
    });

    await t.step(
      "aggregate: against the server, as the list counts",
      async () => {
        const all = await admin.entity("posts").list({ count: true, limit: 1 });
        const r = await admin.entity("posts").aggregate({ count: true });
        assertEquals(r.groups.length, 1);
        assertEquals(r.groups[0].count, all.total);
      },
    );

    mb.close();
    admin.close();
  } finally {
    await s.close();
  }
});

Deno.test("client: MoonbaseError carries status, fields and mfa_id", () => {
  const e = new MoonbaseError(401, "Cannot log in", {
    data: { mfa_id: "m1" },
    fields: { code: { code: "invalid", message: "Wrong" } },
  });
  assertEquals([e.status, e.mfaId, e.fields.code.code], [401, "m1", "invalid"]);
  assert(e instanceof Error);
});
