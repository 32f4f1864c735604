/**
 * `mb.backups` of `@moonbase/client` against a real server, on both
 * databases: create (named and not), list, download (a stream, and a plain
 * link with an admin's file token), upload, delete and restore; a user is
 * refused. Also the dashboard's hook: a subclass overriding `send` sees the
 * services' calls.
 *
 * @module
 */

import { Moonbase, type SendOptions } from "../client/mod.ts";
import { assert, assertEquals, forEachDb, startServer } from "./_server.ts";
import {
  adminClient,
  clientOf,
  exampleEntities,
  rejection,
  untyped,
} from "./_client_fixtures.ts";

async function bytesOf(stream: ReadableStream<Uint8Array>): Promise<number> {
  let n = 0;
  for await (const chunk of stream) n += chunk.byteLength;
  return n;
}

forEachDb("client: backups", async (t, db) => {
  const s = await startServer(db, { trustProxy: true });
  const admin = await adminClient(s);
  try {
    await exampleEntities(s);
    const users = untyped(admin).entity("users");

    await t.step("create, list, download, upload, delete", async () => {
      const named = await admin.backups.create("client-one");
      assertEquals(named.name, "client-one.tar.gz");
      assert(named.size > 0, "a size");
      assert(!Number.isNaN(Date.parse(named.created)), "a time");
      const auto = await admin.backups.create();
      assert(/^mb_backup_.*\.tar\.gz$/.test(auto.name), auto.name);
      const listed = (await admin.backups.list()).map((b) => b.name);
      assert(listed.includes(named.name) && listed.includes(auto.name));

      assertEquals(
        await bytesOf(await admin.backups.download(named.name)),
        named.size,
      );
      // A plain link: no header, an admin's file token in the query.
      const { token } = await admin.files.token();
      const url = admin.backups.downloadUrl(named.name, { token });
      assertEquals(
        new URL(url).pathname,
        "/api/v1/sys/backups/client-one.tar.gz",
      );
      const res = await fetch(url);
      assertEquals(res.status, 200);
      assertEquals(res.headers.get("content-type"), "application/gzip");
      const archive = await res.blob();
      assertEquals(archive.size, named.size);
      const bare = await fetch(admin.backups.downloadUrl(named.name));
      await bare.body?.cancel();
      assertEquals(bare.status, 401, "no token, no archive");

      const up = await admin.backups.upload(archive, "client-copy");
      assertEquals([up.name, up.size], ["client-copy.tar.gz", named.size]);
      const asFile = await admin.backups.upload(
        new File([archive], "from-file.tar.gz"),
      );
      assertEquals(asFile.name, "from-file.tar.gz");
      const junk = await rejection(() =>
        admin.backups.upload(new Blob(["not an archive"]), "junk")
      );
      assertEquals(junk.status, 400);

      for (const name of [auto.name, up.name, asFile.name]) {
        await admin.backups.delete(name);
      }
      const left = (await admin.backups.list()).map((b) => b.name);
      assertEquals(left.includes(up.name), false);
      assertEquals(
        (await rejection(() => admin.backups.delete(up.name))).status,
        404,
      );
    });

    await t.step("restore puts the backup's data back", async () => {
      const made = await users.create({
        email: `before-${db}@example.com`,
        password: "correct-horse-1",
      });
      const point = await admin.backups.create("client-point");
      const later = await users.create({
        email: `after-${db}@example.com`,
        password: "correct-horse-1",
      });
      const done = await admin.backups.restore(point.name);
      assertEquals(done.name, point.name);
      assertEquals(done.database, db);
      assert(done.tables.users >= 1, "rows per table");
      assertEquals((await users.get(made.id)).id, made.id);
      assertEquals(
        (await rejection(() => users.get(later.id))).status,
        404,
        "a record made after the backup is gone",
      );
    });

    await t.step("a user is refused", async () => {
      const mb = clientOf(s);
      await mb.entity("users").create({
        email: `plain-${db}@example.com`,
        password: "correct-horse-1",
      });
      await mb.auth("users").login(
        `plain-${db}@example.com`,
        "correct-horse-1",
      );
      assertEquals((await rejection(() => mb.backups.list())).status, 403);
      const { token } = await mb.files.token();
      const res = await fetch(mb.backups.downloadUrl("client-one", { token }));
      await res.body?.cancel();
      assertEquals(res.status, 403);
      mb.close();
    });
  } finally {
    admin.close();
    await s.close();
  }
});

Deno.test("client: a subclass overriding send sees every service call", async () => {
  const seen: string[] = [];
  class Watched extends Moonbase {
    override send<T = unknown>(
      method: string,
      path: string,
      options?: SendOptions,
    ): Promise<T> {
      seen.push(`${method} ${path}`);
      return super.send<T>(method, path, options);
    }
  }
  const mb = new Watched("http://moonbase.invalid", {
    fetch: () =>
      Promise.resolve(Response.json({ status: 200, data: [], error: "" })),
  });
  await mb.backups.list();
  await mb.entity("posts").list();
  await mb.schemas.list();
  assertEquals(seen, [
    "GET /api/v1/sys/backups",
    "GET /api/v1/entities/posts",
    "GET /api/v1/schemas",
  ]);
  mb.close();
});
