/**
 * Files: multipart create and PATCH (text parts converted to the field types,
 * `@jsonPayload`, stored names and bytes on disk) and a multipart sign-up of an
 * auth entity with an avatar.
 *
 * @module
 */

import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  startServer,
} from "./_server.ts";
import {
  assertStored,
  CONFIG,
  createEntities,
  entityDir,
  file,
  getFile,
  PNG,
  record,
  sendForm,
  TXT,
} from "./_files_fixtures.ts";

// The steps share one server and its entities; each creates the records it
// reads and reads nothing another step writes.
forEachDb("files: multipart writes", async (t, db) => {
  const s = await startServer(db, CONFIG);
  try {
    await createEntities(s, "users", "pub");
    const admin = await s.adminToken();
    const dir = entityDir(s, "pub");
    const post = (fd: FormData) =>
      sendForm(s, "POST", "/api/v1/entities/pub", fd, { token: admin });

    await t.step("create: text parts converted, files stored", async () => {
      const fd = new FormData();
      fd.append("title", "hello");
      fd.append("n", "5");
      fd.append("b", "true");
      fd.append("j", '{"a":[1,2],"s":"x"}');
      fd.append("cover", file(TXT, "hello.txt", "text/plain"));
      fd.append("att", file("one", "one.txt"));
      fd.append("att", file("two", "two.md"));
      const r = await post(fd);
      assertStatus(r, 201, "multipart create");
      assertEquals(r.data.title, "hello", "title");
      assertEquals(r.data.n, 5, "int from text part");
      assertEquals(r.data.b, true, "bool from text part");
      assertEquals(r.data.j, { a: [1, 2], s: "x" }, "json from text part");
      assertStored(r.data.cover, "cover");
      assert(
        r.data.cover.startsWith("hello_") && r.data.cover.endsWith(".txt"),
        `cover keeps base and extension: ${r.data.cover}`,
      );
      assert(
        Array.isArray(r.data.att) && r.data.att.length === 2,
        `att has 2 names: ${r.text}`,
      );
      assertStored(r.data.att[0], "att[0]");
      assertStored(r.data.att[1], "att[1]");
      assert(
        r.data.att[0].startsWith("one_") && r.data.att[0].endsWith(".txt"),
        `att[0]: ${r.data.att[0]}`,
      );
      assert(
        r.data.att[1].startsWith("two_") && r.data.att[1].endsWith(".md"),
        `att[1]: ${r.data.att[1]}`,
      );
      assert(
        new Set([r.data.cover, ...r.data.att]).size === 3,
        "stored names are distinct",
      );
      assertEquals(
        await Deno.readTextFile(join(dir, r.data.cover)),
        TXT,
        "cover bytes on disk",
      );
      assertEquals(
        await Deno.readTextFile(join(dir, r.data.att[0])),
        "one",
        "att[0] bytes",
      );
      assertEquals(
        await Deno.readTextFile(join(dir, r.data.att[1])),
        "two",
        "att[1] bytes",
      );
      const stored = await record(s, "pub", r.data.id);
      assertEquals(
        [stored.cover, stored.att],
        [r.data.cover, r.data.att],
        "the record holds the stored names",
      );
    });

    await t.step(
      "create: the same client name gets another stored name",
      async () => {
        const fd = new FormData();
        fd.append("cover", file(TXT, "hello.txt", "text/plain"));
        const r = await post(fd);
        assertStatus(r, 201, "first hello.txt");
        assertStored(r.data.cover, "first hello.txt");
        const fd2 = new FormData();
        fd2.append("cover", file("again", "hello.txt"));
        const r2 = await post(fd2);
        assertStatus(r2, 201, "same client name again");
        assertStored(r2.data.cover, "second hello.txt");
        assert(r2.data.cover !== r.data.cover, "a new random suffix");
        assertEquals(
          await Deno.readTextFile(join(dir, r.data.cover)),
          TXT,
          "first file untouched",
        );
      },
    );

    await t.step("create: values in @jsonPayload next to a file", async () => {
      const fd = new FormData();
      fd.append(
        "@jsonPayload",
        JSON.stringify({
          title: "from payload",
          n: 7,
          b: false,
          j: { k: "v" },
        }),
      );
      fd.append("cover", file(PNG, "photo.PNG", "image/png"));
      const r = await post(fd);
      assertStatus(r, 201, "@jsonPayload create");
      assertEquals([r.data.title, r.data.n, r.data.b, r.data.j], [
        "from payload",
        7,
        false,
        { k: "v" },
      ], "@jsonPayload values");
      assertStored(r.data.cover, "payload cover");
      assert(
        r.data.cover.startsWith("photo_") && r.data.cover.endsWith(".png"),
        `extension lower-cased: ${r.data.cover}`,
      );
    });

    await t.step("create: text-only multipart conversions", async () => {
      const fd = new FormData();
      fd.append("title", "conv");
      fd.append("b", "false");
      fd.append("n", "-12");
      fd.append("j", '[1,"two",null]');
      const r = await post(fd);
      assertStatus(r, 201, "text-only multipart create");
      assertEquals([r.data.b, r.data.n, r.data.j, r.data.cover ?? null], [
        false,
        -12,
        [1, "two", null],
        null,
      ], "converted values");
    });

    await t.step("PATCH: text parts and files", async () => {
      let r = await s.request("POST", "/api/v1/entities/pub", {
        token: admin,
        body: { title: "plain", n: 1 },
      });
      assertStatus(r, 201, "JSON create");
      const id = r.data.id;
      const fd = new FormData();
      fd.append("title", "patched");
      fd.append("n", "6");
      fd.append("cover", file(TXT, "new cover.txt"));
      fd.append("att", file("x", "x.txt"));
      r = await sendForm(s, "PATCH", `/api/v1/entities/pub/${id}`, fd, {
        token: admin,
      });
      assertStatus(r, 200, "multipart PATCH");
      assertEquals([r.data.title, r.data.n], ["patched", 6], "patched values");
      assertStored(r.data.cover, "patched cover");
      assert(
        r.data.cover.startsWith("new_cover_"),
        `spaces sanitized: ${r.data.cover}`,
      );
      assertEquals(r.data.att.length, 1, "one att");
      assertStored(r.data.att[0], "patched att");
      const rec = await record(s, "pub", id);
      assertEquals([rec.title, rec.n, rec.cover, rec.att], [
        "patched",
        6,
        r.data.cover,
        r.data.att,
      ], "stored record");
      assertEquals(
        await Deno.readTextFile(join(dir, r.data.cover)),
        TXT,
        "bytes on disk",
      );
    });

    await t.step("auth entity: multipart sign-up with an avatar", async () => {
      const r = await sendForm(s, "POST", "/api/v1/entities/users", [
        { name: "email", value: "avatar@files.test" },
        { name: "password", value: "password456" },
        { name: "avatar", filename: "me.png", data: PNG, type: "image/png" },
      ]);
      assertStatus(r, 201, "guest sign-up by multipart");
      assertStored(r.data.avatar, "avatar");
      assertEquals(r.data.email, "avatar@files.test", "email");
      assert(!("password" in r.data), "no password in the response");
      assert(!r.text.includes("password456"), "no password text");
      const login = await s.request("POST", "/api/v1/auth/users/login", {
        body: { identity: "avatar@files.test", password: "password456" },
        headers: { "x-forwarded-for": "10.77.0.1" },
      });
      assertStatus(login, 200, "the multipart password was hashed and works");
      const path = `/api/files/users/${r.data.avatar}`;
      assertEquals((await getFile(s, path)).status, 404, "guest");
      assertEquals(
        (await getFile(s, path, { token: login.data.token })).status,
        404,
        "the user, under an admin-only get rule",
      );
      const g = await getFile(s, path, { token: admin });
      assertEquals(g.status, 200, "admin");
      assertEquals(g.headers.get("content-type"), "image/png", "type");
      assertEquals(g.headers.get("content-length"), String(PNG.length), "size");
    });
  } finally {
    await s.close();
  }
});
