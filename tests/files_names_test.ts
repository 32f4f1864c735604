/**
 * Files: stored names. Whatever the client calls a file (traversal, absolute
 * and Windows paths, NUL, look-alike Unicode, very long names, `filename*`),
 * it is stored under a sanitized name inside the entity's directory and
 * nowhere else; an empty file input stores nothing.
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
  filesSnapshot,
  getFile,
  type Part,
  sendForm,
  walk,
} from "./_files_fixtures.ts";

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
