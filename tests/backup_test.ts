/**
 * Backups (lib/backup, routes/backups.ts): an archive made on one database
 * restores into the other and the API answers identically; one made on
 * files in S3 restores onto local files and into S3 again, the files served
 * identically; a restore that fails leaves the data as it was; a backup
 * taken under writes is whole.
 */
import {
  assert,
  assertEquals,
  assertStatus,
  DATABASES,
  forEachDb,
  startServer,
  type TestServer,
} from "./_server.ts";
import { multipart } from "./_files_fixtures.ts";
import { makePng, setupBlog } from "./_records_fixtures.ts";
import { fastUser, USER_PW, userToken } from "./_auth_fixtures.ts";
import { TarWriter } from "../lib/backup/tar.ts";
import { hasS3, S3_KEY, startS3 } from "./_s3.ts";
import { walk } from "./_files_fixtures.ts";

/** The member's password (its hash is known ahead: no scrypt to store it). */
const USER_PASSWORD = USER_PW;

/** A project with every field type, a rule, a user, settings and files. */
async function seedProject(s: TestServer): Promise<void> {
  const token = await setupBlog(s);
  const r1 = await s.request("POST", "/api/v1/schemas", {
    token,
    body: {
      name: "members",
      type: "auth",
      fields: [{ name: "nick", type: "string" }],
      rules: {
        get: { mode: "custom", expr: "auth.id == record.id" },
        list: { mode: "custom", expr: "auth.id == record.id" },
      },
    },
  });
  assertStatus(r1, 201, "members");
  await fastUser(
    s,
    "members",
    { email: "ann@example.com", nick: "Ann" },
    USER_PASSWORD,
  );
  // A search index (not in archives: made again from the rows).
  const authors = await s.request("GET", "/api/v1/schemas/authors", { token });
  const name = authors.data.fields.find((f: { name: string }) =>
    f.name === "name"
  );
  assertStatus(
    await s.request("PATCH", "/api/v1/schemas/authors", {
      token,
      body: { fields: [{ ...name, searchable: true }] },
    }),
    200,
    "searchable",
  );
  const a = await s.request("POST", "/api/v1/entities/authors", {
    token,
    body: { name: "Émile 🌙" },
  });
  assertStatus(a, 201);
  const png = new Uint8Array(await makePng());
  const form = multipart([
    { name: "title", value: "with files" },
    { name: "author", value: a.data.id },
    { name: "views", value: "9007199254740991" },
    { name: "score", value: "3.25" },
    { name: "published", value: "true" },
    { name: "when", value: "2026-11-28T10:00:00.000Z" },
    { name: "meta", value: JSON.stringify({ nested: [1, "two", null] }) },
    { name: "status", value: "published" },
    { name: "cover", filename: "c.png", data: png, type: "image/png" },
    {
      name: "attachments",
      filename: "a.txt",
      data: "alpha",
      type: "text/plain",
    },
    {
      name: "attachments",
      filename: "b.txt",
      data: "beta",
      type: "text/plain",
    },
  ]);
  const p = await s.request("POST", "/api/v1/entities/posts", {
    token,
    raw: form.body,
    headers: { "content-type": form.type },
  });
  assertStatus(p, 201, "post with files");
  // A thumbnail (made on demand, so not carried by backups) is in the ledger.
  const thumb = await fetch(
    `${s.url}/api/files/posts/${p.data.cover}?thumb=8x8`,
    { headers: { authorization: `Bearer ${token}` } },
  );
  await thumb.body?.cancel();
  assertEquals(thumb.status, 200);
  // At once (the comparisons sort by created, then id).
  await Promise.all(Array.from({ length: 30 }, async (_, i) => {
    const r = await s.request("POST", "/api/v1/entities/posts", {
      token,
      body: { title: `plain ${i}`, published: i % 2 === 0, meta: [i] },
    });
    assertStatus(r, 201);
  }));
  const set = await s.request("PATCH", "/api/v1/sys/settings", {
    token,
    body: { app: { name: "Backed Up" } },
  });
  assert(set.status === 200, `settings: ${set.status} ${set.text}`);
}

/** What the API answers about the project, for comparing two servers. */
async function answers(s: TestServer, token: string) {
  const schemas = await s.request("GET", "/api/v1/schemas", { token });
  assertStatus(schemas, 200);
  const out: Record<string, unknown> = {
    schemas:
      (schemas.data as { name: string; rules: unknown; fields: unknown }[])
        .map((e) => ({ name: e.name, rules: e.rules, fields: e.fields }))
        .sort((a, b) => a.name.localeCompare(b.name)),
  };
  for (const entity of ["authors", "posts", "members"]) {
    const list = await s.request(
      "GET",
      `/api/v1/entities/${entity}?sort=created,id&limit=200`,
      { token },
    );
    assertStatus(list, 200, entity);
    out[entity] = list.data.items;
  }
  const found = await s.request(
    "GET",
    "/api/v1/entities/authors?search=EMILE&count=true",
    { token },
  );
  assertStatus(found, 200, "search");
  assertEquals(found.data.total, 1, "search finds the restored author");
  out.searched = found.data.items;
  const settings = await s.request("GET", "/api/v1/sys/settings", { token });
  out.app = settings.data.app;
  return out;
}

async function adminLogin(s: TestServer): Promise<string> {
  const r = await s.request("POST", "/api/v1/sys/admins/login", {
    body: { identity: "admin@example.com", password: s.adminPassword },
  });
  assertStatus(r, 200, "admin login");
  return r.data.token;
}

async function download(s: TestServer, token: string, name: string) {
  const r = await fetch(`${s.url}/api/v1/sys/backups/${name}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  assert(r.status === 200, `download ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

async function upload(
  s: TestServer,
  token: string,
  name: string,
  bytes: Uint8Array,
) {
  const form = multipart([
    { name: "name", value: name },
    {
      name: "file",
      filename: `${name}.tar.gz`,
      data: bytes,
      type: "application/gzip",
    },
  ]);
  return await s.request("POST", "/api/v1/sys/backups/upload", {
    token,
    raw: form.body,
    headers: { "content-type": form.type },
  });
}

async function fileBytes(
  s: TestServer,
  token: string,
  post: Record<string, unknown>,
) {
  const out: string[] = [];
  for (const name of [post.cover, ...(post.attachments as string[])]) {
    const r = await fetch(`${s.url}/api/files/posts/${name}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert(r.status === 200, `file ${name}: ${r.status}`);
    out.push(new TextDecoder("latin1").decode(await r.arrayBuffer()));
  }
  return out;
}

Deno.test({
  name:
    "a backup moves a project SQLite → PostgreSQL → SQLite and answers identically",
  ignore: !DATABASES.includes("postgres") || !DATABASES.includes("sqlite"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const a = await startServer("sqlite");
    const b = await startServer("postgres");
    const c = await startServer("sqlite");
    try {
      await seedProject(a);
      const ta = await a.adminToken();
      const before = await answers(a, ta);
      const withFiles = (before.posts as Record<string, unknown>[])
        .find((p) => p.title === "with files")!;
      const filesBefore = await fileBytes(a, ta, withFiles);

      const made = await a.request("POST", "/api/v1/sys/backups", {
        token: ta,
        body: { name: "first" },
      });
      assertStatus(made, 201);
      assertEquals(made.data.name, "first.tar.gz");
      const listed = await a.request("GET", "/api/v1/sys/backups", {
        token: ta,
      });
      assertEquals(listed.data.map((x: { name: string }) => x.name), [
        "first.tar.gz",
      ]);
      const bytes = await download(a, ta, "first.tar.gz");
      assertEquals(bytes.length, made.data.size);

      // Into PostgreSQL: upload, restore, the same answers.
      const tb = await b.adminToken();
      const up = await upload(b, tb, "from-sqlite", bytes);
      assertStatus(up, 201, "upload");
      const restored = await b.request(
        "POST",
        "/api/v1/sys/backups/from-sqlite.tar.gz/restore",
        { token: tb },
      );
      assertStatus(restored, 200, "restore into postgres");
      assertEquals(restored.data.database, "sqlite");
      const tb2 = await adminLogin(b); // the admins are the backup's now
      assertEquals(await answers(b, tb2), before);
      assertEquals(await fileBytes(b, tb2, withFiles), filesBefore);
      const thumb = await fetch(
        `${b.url}/api/files/posts/${withFiles.cover}?thumb=8x8`,
        { headers: { authorization: `Bearer ${tb2}` } },
      );
      await thumb.body?.cancel();
      assertEquals(thumb.status, 200, "a thumbnail is made again");
      assertEquals(
        thumb.headers.get("content-length") !==
          filesBefore[0].length.toString(),
        true,
        "the thumbnail, not the original",
      );
      await userToken(b, "members", "ann@example.com", USER_PASSWORD);

      // And back into SQLite.
      const again = await b.request("POST", "/api/v1/sys/backups", {
        token: tb2,
        body: {},
      });
      assertStatus(again, 201);
      const bytes2 = await download(b, tb2, again.data.name);
      const tc = await c.adminToken();
      // An entity with a search index the restore replaces.
      assertStatus(
        await c.request("POST", "/api/v1/schemas", {
          token: tc,
          body: {
            name: "scratch",
            type: "base",
            fields: [{ name: "t", type: "text", searchable: true }],
          },
        }),
        201,
      );
      assertStatus(await upload(c, tc, "from-pg", bytes2), 201);
      assertStatus(
        await c.request("POST", "/api/v1/sys/backups/from-pg/restore", {
          token: tc,
        }),
        200,
      );
      const tc2 = await adminLogin(c);
      assertEquals(await answers(c, tc2), before);
      const searchTables = await c.app.storage.query(
        `SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'mb_search_%' AND name NOT LIKE '%_fts%'`,
      );
      assertEquals(searchTables.length, 1, "only the archive's search index");
      assertEquals(await fileBytes(c, tc2, withFiles), filesBefore);
      const member = await userToken(
        c,
        "members",
        "ann@example.com",
        USER_PASSWORD,
      );
      const own = await c.request("GET", "/api/v1/entities/members", {
        token: member,
      });
      assertEquals(own.data.items.length, 1, "the rule came along");
    } finally {
      await a.close();
      await b.close();
      await c.close();
    }
  },
});

/** How each file of the post is served: status, headers that matter, bytes. */
async function served(
  s: TestServer,
  token: string,
  post: Record<string, unknown>,
) {
  const out: unknown[] = [];
  for (const name of [post.cover, ...(post.attachments as string[])]) {
    const r = await fetch(`${s.url}/api/files/posts/${name}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    out.push({
      name,
      status: r.status,
      headers: [
        "content-type",
        "content-length",
        "etag",
        "cache-control",
        "content-disposition",
        "x-content-type-options",
      ].map((h) => r.headers.get(h)),
      bytes: new TextDecoder("latin1").decode(await r.arrayBuffer()),
    });
  }
  return out;
}

for (const db of DATABASES) {
  Deno.test({
    name:
      `backups of files in S3: restored onto local files and into S3, served identically [${db}]`,
    ignore: !hasS3(),
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async (t) => {
      const s3 = await startS3();
      const bucket = await s3.createBucket();
      const inS3 = (prefix: string) => ({
        files: s3.filesUrl(bucket, prefix),
        filesCredentials: S3_KEY,
      });
      const a = await startServer(db, inS3("a"));
      const b = await startServer(db);
      const c = await startServer(db, inS3("c"));
      try {
        await seedProject(a);
        const ta = await a.adminToken();
        const before = await answers(a, ta);
        const post = (before.posts as Record<string, unknown>[])
          .find((p) => p.title === "with files")!;
        const names = [post.cover, ...(post.attachments as string[])]
          .map(String).sort();
        const postsId = a.app.schemas.get("posts")!.id;
        const servedBefore = await served(a, ta, post);
        assertEquals(
          (await s3.keys(bucket, `a/${postsId}/`)).map((k) =>
            k.slice(`a/${postsId}/`.length)
          ),
          [...names, `${post.cover}.8x8.thumb.png`].sort(),
          "the files and a thumbnail are in S3",
        );
        const made = await a.request("POST", "/api/v1/sys/backups", {
          token: ta,
          body: { name: "s3" },
        });
        assertStatus(made, 201);
        const bytes = await download(a, ta, "s3.tar.gz");

        await t.step("onto local files", async () => {
          const tb = await b.adminToken();
          assertStatus(await upload(b, tb, "from-s3", bytes), 201);
          const restored = await b.request(
            "POST",
            "/api/v1/sys/backups/from-s3/restore",
            { token: tb },
          );
          assertStatus(restored, 200);
          assertEquals(restored.data.files, 3, "the files, not the thumbnail");
          const tb2 = await adminLogin(b);
          assertEquals(await answers(b, tb2), before);
          assertEquals(await served(b, tb2, post), servedBefore);
          assertEquals(
            await walk(`${b.dataDir}/files`),
            names.map((n) => `${postsId}/${n}`),
            "on disk: the files, nothing else",
          );
          const thumb = await fetch(
            `${b.url}/api/files/posts/${post.cover}?thumb=8x8`,
            { headers: { authorization: `Bearer ${tb2}` } },
          );
          await thumb.body?.cancel();
          assertEquals(thumb.status, 200, "a thumbnail is made again");
        });

        await t.step("into S3 again", async () => {
          const tc = await c.adminToken();
          assertStatus(await upload(c, tc, "from-s3", bytes), 201);
          assertStatus(
            await c.request("POST", "/api/v1/sys/backups/from-s3/restore", {
              token: tc,
            }),
            200,
          );
          const tc2 = await adminLogin(c);
          assertEquals(await answers(c, tc2), before);
          assertEquals(await served(c, tc2, post), servedBefore);
          assertEquals(
            await s3.keys(bucket, "c/"),
            names.map((n) => `c/${postsId}/${n}`),
            "in S3: the files, nothing else",
          );
        });
      } finally {
        await a.close();
        await b.close();
        await c.close();
      }
    },
  });
}

/** Builds a gzip'd tar from entries (for damaged and foreign archives). */
async function archive(entries: [string, string][]): Promise<Uint8Array> {
  const tar = new TarWriter(Date.now());
  const out = new Response(
    tar.stream.pipeThrough(
      new CompressionStream("gzip") as unknown as TransformStream<
        Uint8Array,
        Uint8Array
      >,
    ),
  ).arrayBuffer();
  for (const [name, text] of entries) {
    await tar.add(name, new TextEncoder().encode(text));
  }
  await tar.close();
  return new Uint8Array(await out);
}

forEachDb(
  "backups: a failed restore or upload leaves the data as it was",
  async (t, db) => {
    const s = await startServer(db);
    try {
      await seedProject(s);
      const token = await s.adminToken();
      const before = await answers(s, token);
      const made = await s.request("POST", "/api/v1/sys/backups", {
        token,
        body: { name: "good" },
      });
      assertStatus(made, 201);
      const good = await download(s, token, "good.tar.gz");
      const flipped = good.slice();
      flipped[Math.floor(flipped.length / 2)] ^= 0xff;
      const cases: [string, Uint8Array, RegExp][] = [
        [
          "truncated",
          good.slice(0, Math.floor(good.length * 0.6)),
          /Cannot (read|restore) backup/,
        ],
        ["a flipped byte", flipped, /Cannot (read|restore) backup/],
        [
          "not gzip",
          new TextEncoder().encode("hello"),
          /Cannot (read|restore) backup/,
        ],
        [
          "another format",
          await archive([[
            "moonbase-backup.json",
            JSON.stringify({
              format: 99,
              moonbase: "9.9.9",
              database: "sqlite",
              created: "",
            }),
          ]]),
          /format 99/,
        ],
        [
          "a bad checksum",
          await archive([
            [
              "moonbase-backup.json",
              JSON.stringify({
                format: 1,
                moonbase: "x",
                database: "sqlite",
                created: "",
              }),
            ],
            ["tables/mb_tables/000001.jsonl", ""],
            [
              "manifest.json",
              JSON.stringify({
                format: 1,
                tables: {},
                checksums: { "moonbase-backup.json": "00" },
              }),
            ],
          ]),
          /checksum/,
        ],
      ];
      for (const [what, bytes, message] of cases) {
        await t.step(`upload of ${what} → 400, nothing stored`, async () => {
          const r = await upload(s, token, "bad", bytes);
          assertStatus(r, 400, what);
          assert(message.test(r.error), `${what}: ${r.error}`);
        });
        await t.step(`restore of ${what} → 400, data untouched`, async () => {
          // Put it in the folder by hand (as a copied file would be).
          await Deno.writeFile(`${s.dataDir}/backups/bad.tar.gz`, bytes);
          const r = await s.request("POST", "/api/v1/sys/backups/bad/restore", {
            token,
          });
          assertStatus(r, 400, what);
          assert(message.test(r.error), `${what}: ${r.error}`);
          await Deno.remove(`${s.dataDir}/backups/bad.tar.gz`);
          assertEquals(await answers(s, token), before);
        });
      }
      await t.step("names cannot escape the folder", async () => {
        for (const name of ["../x", ".hidden", "a/b", "x".repeat(200)]) {
          const r = await s.request("POST", "/api/v1/sys/backups", {
            token,
            body: { name },
          });
          assertStatus(r, 400, name);
        }
        const r = await s.request(
          "GET",
          "/api/v1/sys/backups/..%2F..%2Fdata.db",
          { token },
        );
        assert(r.status === 400 || r.status === 404, `escape: ${r.status}`);
      });
      await t.step(
        "admins only; a file token of an admin downloads",
        async () => {
          assertStatus(await s.request("GET", "/api/v1/sys/backups"), 401);
          const user = await userToken(
            s,
            "members",
            "ann@example.com",
            USER_PASSWORD,
          );
          assertStatus(
            await s.request("GET", "/api/v1/sys/backups", { token: user }),
            403,
          );
          const userFile = await s.request("POST", "/api/v1/files/token", {
            token: user,
          });
          const denied = await fetch(
            `${s.url}/api/v1/sys/backups/good.tar.gz?token=${userFile.data.token}`,
          );
          await denied.body?.cancel();
          assertEquals(denied.status, 403);
          const file = await s.request("POST", "/api/v1/files/token", {
            token,
          });
          const ok = await fetch(
            `${s.url}/api/v1/sys/backups/good.tar.gz?token=${file.data.token}`,
          );
          assertEquals(ok.status, 200);
          assertEquals(
            new Uint8Array(await ok.arrayBuffer()).length,
            good.length,
          );
        },
      );
      await t.step("writes answer 503 while a restore runs", async () => {
        const end = s.app.writePause.begin("a restore is replacing the data");
        try {
          const w = await s.request("POST", "/api/v1/entities/authors", {
            token,
            body: { name: "x" },
          });
          assertStatus(w, 503);
          assert(w.headers.get("retry-after") !== null, "retry-after");
          const r = await s.request("GET", "/api/v1/entities/authors", {
            token,
          });
          assertStatus(r, 200);
        } finally {
          end();
        }
      });
      await t.step("delete removes only that backup", async () => {
        assertStatus(
          await s.request("DELETE", "/api/v1/sys/backups/good.tar.gz", {
            token,
          }),
          204,
        );
        assertStatus(
          await s.request("DELETE", "/api/v1/sys/backups/good.tar.gz", {
            token,
          }),
          404,
        );
        assertEquals(await answers(s, token), before);
      });
    } finally {
      await s.close();
    }
  },
);

forEachDb(
  "backups: a backup taken under writes holds whole batches only",
  async (_t, db) => {
    const s = await startServer(db);
    const r2 = await startServer(db);
    try {
      const token = await s.adminToken();
      for (
        const body of [
          {
            name: "orders",
            type: "base",
            fields: [{ name: "n", type: "int" }],
          },
          {
            name: "lines",
            type: "base",
            fields: [
              { name: "n", type: "int" },
              {
                name: "order",
                type: "relation",
                foreign_key: { entity: "orders", on_delete: "cascade" },
              },
            ],
          },
        ]
      ) {
        assertStatus(
          await s.request("POST", "/api/v1/schemas", { token, body }),
          201,
        );
      }
      let stop = false, written = 0;
      const writer = (async () => {
        for (let i = 0; !stop; i++) {
          const id = crypto.randomUUID();
          const r = await s.request("POST", "/api/v1/batch", {
            token,
            body: {
              requests: [
                {
                  method: "PUT",
                  url: "/api/v1/entities/orders",
                  body: { id, n: i },
                },
                {
                  method: "POST",
                  url: "/api/v1/entities/lines",
                  body: { n: i, order: id },
                },
                {
                  method: "POST",
                  url: "/api/v1/entities/lines",
                  body: { n: i, order: id },
                },
              ],
            },
          });
          assertStatus(r, 200, "batch");
          written++;
        }
      })();
      while (written < 5) await new Promise((r) => setTimeout(r, 10));
      const made = await s.request("POST", "/api/v1/sys/backups", {
        token,
        body: { name: "busy" },
      });
      stop = true;
      await writer;
      assertStatus(made, 201);
      const bytes = await download(s, token, "busy.tar.gz");
      const t2 = await r2.adminToken();
      assertStatus(await upload(r2, t2, "busy", bytes), 201);
      assertStatus(
        await r2.request("POST", "/api/v1/sys/backups/busy/restore", {
          token: t2,
        }),
        200,
      );
      const admin = await adminLogin(r2);
      const orders = await r2.request(
        "GET",
        "/api/v1/entities/orders?limit=1&count=true",
        { token: admin },
      );
      const lines = await r2.request(
        "GET",
        "/api/v1/entities/lines?limit=1&count=true",
        { token: admin },
      );
      assert(orders.data.total >= 5, `orders: ${orders.data.total}`);
      assertEquals(lines.data.total, orders.data.total * 2);
    } finally {
      await s.close();
      await r2.close();
    }
  },
);
