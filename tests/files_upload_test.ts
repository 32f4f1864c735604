/**
 * Files: uploading. Multipart create and PATCH (text parts converted to the
 * field types, `@jsonPayload`, stored names and bytes on disk), a multipart
 * sign-up of an auth entity with an avatar, and stored names: whatever the
 * client calls a file (traversal, absolute and Windows paths, NUL, look-alike
 * Unicode, very long names, `filename*`), it is stored under a sanitized name
 * inside the entity's directory and nowhere else; an empty file input stores
 * nothing.
 *
 * @module
 */

import { dirname, join, relative } from "node:path";
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
  exists,
  file,
  filesSnapshot,
  getFile,
  type Part,
  PNG,
  record,
  sendForm,
  TXT,
  walk,
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

/** A client file name and what its stored name must match (if anything). */
const NAMES: { name: string; filename: string; want?: RegExp }[] = [
  { name: "../x", filename: "../x", want: /^x_/ },
  { name: "../../../x", filename: "../../../x", want: /^x_/ },
  { name: "..%2f..%2fx", filename: "..%2f..%2fx" },
  { name: "%2e%2e%2f%2e%2e%2fx", filename: "%2e%2e%2f%2e%2e%2fx" },
  { name: "/etc/passwd", filename: "/etc/passwd", want: /^passwd_/ },
  { name: "C:\\x\\y.txt", filename: "C:\\x\\y.txt", want: /\.txt$/ },
  { name: "..\\..\\y.txt", filename: "..\\..\\y.txt", want: /\.txt$/ },
  { name: "NUL inside", filename: "a\u0000b.txt", want: /\.txt$/ },
  { name: "fullwidth solidus", filename: "..\uff0fx", want: /^x_/ },
  {
    name: "fullwidth ../etc/passwd",
    filename:
      "\uff0e\uff0e\uff0f\uff45\uff54\uff43\uff0f\uff50\uff41\uff53\uff53\uff57\uff44",
    want: /^passwd_/,
  },
  { name: "one-dot leaders", filename: "\u2024\u2024/x", want: /^x_/ },
  {
    name: "1000 characters",
    filename: "a".repeat(996) + ".txt",
    want: /^a+_[A-Za-z0-9]{10}\.txt$/,
  },
  {
    name: "spaces and an emoji",
    filename: "my photo 😀.png",
    want: /^my_photo_[A-Za-z0-9]{10}\.png$/,
  },
  { name: "only emoji", filename: "😀😀😀" },
  { name: ".htaccess", filename: ".htaccess" },
  { name: "..", filename: ".." },
  { name: "-rf .txt", filename: "-rf .txt" },
  { name: "x.PhP5", filename: "x.PhP5", want: /\.php5$/ },
  { name: "x.tar.gz", filename: "x.tar.gz", want: /\.gz$/ },
  { name: "filename* with a traversal", filename: "safe.txt" },
];

/** The upload part of row `i` of `NAMES`. */
function partOf(i: number): Part {
  const c = NAMES[i];
  return {
    name: "att",
    filename: c.filename,
    data: `content-${i}`,
    ...(c.name.startsWith("filename*")
      ? {
        disposition:
          `form-data; name="att"; filename="safe.txt"; filename*=UTF-8''..%2F..%2Fetc%2Fpasswd`,
      }
      : {}),
  };
}

/** The database files a server writes next to `files/`. */
const isDb = (p: string) =>
  /(^|\/)(logs|moonbase)\.db(-wal|-shm|-journal)?$/.test(p);

// The rows share one server and the `pub` entity; each uploads its own record
// and compares the disk before and after its own request.
forEachDb("files: stored names", async (t, db) => {
  const s = await startServer(db, CONFIG);
  try {
    await createEntities(s, "pub");
    const admin = await s.adminToken();
    const dir = entityDir(s, "pub");
    const tmp = dirname(s.dataDir);
    const outside = [
      join(tmp, "x"),
      join(tmp, "passwd"),
      join(tmp, "y.txt"),
      join(s.dataDir, "x"),
      join(s.dataDir, "passwd"),
      join(s.dataDir, "files", "x"),
      join(s.dataDir, "files", "passwd"),
    ];
    const preexisting = new Set<string>();
    for (const p of outside) if (await exists(p)) preexisting.add(p);

    for (const [i, c] of NAMES.entries()) {
      await t.step(`sanitized, inside the entity dir: ${c.name}`, async () => {
        const content = `content-${i}`;
        const part = partOf(i);
        const before = new Set((await walk(s.dataDir)).filter((p) => !isDb(p)));
        const r = await sendForm(s, "POST", "/api/v1/entities/pub", [part], {
          token: admin,
        });
        assertStatus(r, 201, "upload of a hostile name");
        const att: string[] = r.data.att;
        assertEquals(att.length, 1, "one stored file per part");
        const stored = att[0];
        assertStored(stored, c.name);
        assert(
          stored.length <= 200,
          `stored name fits a file system (${stored.length})`,
        );
        if (c.want) {
          assert(c.want.test(stored), `${stored} should match ${c.want}`);
        }
        assertEquals(
          await Deno.readTextFile(join(dir, stored)),
          content,
          "stored in the entity dir",
        );
        const g = await getFile(
          s,
          `/api/files/pub/${encodeURIComponent(stored)}`,
        );
        assertEquals([g.status, g.text], [200, content], "served");
        const added = (await walk(s.dataDir)).filter((p) =>
          !isDb(p) && !before.has(p)
        );
        assertEquals(
          added,
          [join(relative(s.dataDir, dir), stored)],
          "the only new file is in the entity dir",
        );
        for (const p of outside) {
          if (!preexisting.has(p)) {
            assertEquals(await exists(p), false, `nothing written at ${p}`);
          }
        }
      });
    }

    await t.step("every hostile name in one request: a file each", async () => {
      const before = new Set((await walk(s.dataDir)).filter((p) => !isDb(p)));
      const r = await sendForm(
        s,
        "POST",
        "/api/v1/entities/pub",
        NAMES.map((_, i) => partOf(i)),
        { token: admin },
      );
      assertStatus(r, 201, "upload of hostile names");
      const att: string[] = r.data.att;
      assertEquals(att.length, NAMES.length, "one stored file per part");
      for (const [i, stored] of att.entries()) {
        assertStored(stored, NAMES[i].name);
        assertEquals(
          await Deno.readTextFile(join(dir, stored)),
          `content-${i}`,
          `${NAMES[i].name}: its own file`,
        );
      }
      const added = (await walk(s.dataDir)).filter((p) =>
        !isDb(p) && !before.has(p)
      );
      const rel = relative(s.dataDir, dir);
      assertEquals(
        added,
        att.map((n) => join(rel, n)).sort(),
        "the only new files are in the entity dir",
      );
    });

    await t.step("an empty file input is ignored", async () => {
      const snap = await filesSnapshot(s);
      const fd = new FormData();
      fd.append("title", "empty input");
      fd.append("cover", new File([], ""));
      fd.append("att", new File([], ""));
      const e = await sendForm(s, "POST", "/api/v1/entities/pub", fd, {
        token: admin,
      });
      assertStatus(e, 201, "empty file input");
      assertEquals([e.data.title, e.data.cover ?? null], [
        "empty input",
        null,
      ], "no file for an empty input");
      assertEquals(e.data.att ?? [], [], "no files for an empty input");
      assertEquals(
        await filesSnapshot(s),
        snap,
        "an empty input writes nothing",
      );
    });
  } finally {
    await s.close();
  }
});
