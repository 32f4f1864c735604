/**
 * Files: serving on `/api/files` and `/api/v1/files`. Headers (type, length,
 * nosniff, disposition, caching), HEAD, ETag, Range; the content type by
 * extension with active types as attachments; and 404 for every name the
 * entity does not reference (strays, other entities, traversal).
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
  CONFIG,
  createEntities,
  createEntity,
  createWith,
  entityDir,
  getFile,
  PNG,
  rawHttp,
  sendForm,
  SVG,
  TXT,
} from "./_files_fixtures.ts";

const PREFIXES = ["/api/files", "/api/v1/files"];

/** Ranges of the 20-byte `TXT`: status, body, Content-Range. */
const RANGES: [string, number, string, string][] = [
  ["bytes=0-4", 206, "01234", "bytes 0-4/20"],
  ["bytes=-5", 206, "fghij", "bytes 15-19/20"],
  ["bytes=5-", 206, TXT.slice(5), "bytes 5-19/20"],
  ["bytes=10-10", 206, "a", "bytes 10-10/20"],
  ["bytes=15-100", 206, "fghij", "bytes 15-19/20"],
];
const UNSATISFIABLE = ["bytes=20-", "bytes=30-40", "bytes=-0"];

/**
 * A client name, its bytes, the served type and disposition. Types a
 * browser would run go out as `application/octet-stream` from a field
 * whose `mime_types` do not name them (issue 28 item 7: a `.js` served as
 * `text/javascript` ran from a `<script src>` despite the attachment).
 */
const TYPES: [string, string | Uint8Array, RegExp, "attachment" | "inline"][] =
  [
    ["page.html", "<p>hi</p>", /^application\/octet-stream$/, "attachment"],
    ["PAGE.HTML", "<p>hi</p>", /^application\/octet-stream$/, "attachment"],
    ["image.svg", SVG, /^application\/octet-stream$/, "attachment"],
    [
      "data.xml",
      '<?xml version="1.0"?><a/>',
      /^application\/octet-stream$/,
      "attachment",
    ],
    ["app.js", "alert(1)", /^application\/octet-stream$/, "attachment"],
    ["mod.mjs", "alert(1)", /^application\/octet-stream$/, "attachment"],
    // A stylesheet of the same origin can read a page (CSS selectors leak
    // attribute values): like a script, only from a field naming it.
    ["style.css", "body{}", /^application\/octet-stream$/, "attachment"],
    ["pic.png", PNG, /^image\/png$/, "inline"],
    ["doc.pdf", "%PDF-1.4\n", /^application\/pdf$/, "inline"],
    ["notes.txt", "plain", /^text\/plain/, "inline"],
    ["blob.bin", "\x00\x01", /^application\/octet-stream$/, "inline"],
  ];

// Every step below only reads: the fixtures are uploaded once per test.
forEachDb("files: serving headers, HEAD, ETag, Range", async (t, db) => {
  const s = await startServer(db, CONFIG);
  try {
    await createEntities(s, "pub");
    const rec = await createWith(s, "pub", [
      { name: "cover", filename: "serve me.txt", data: TXT },
    ]);
    for (const prefix of PREFIXES) {
      const path = `${prefix}/pub/${rec.cover}`;
      await t.step(`${prefix}: GET headers`, async () => {
        const g = await getFile(s, path);
        assertEquals(g.status, 200, `${path} status`);
        assertEquals(g.text, TXT, "body");
        assert(
          (g.headers.get("content-type") ?? "").startsWith("text/plain"),
          `content-type: ${g.headers.get("content-type")}`,
        );
        assertEquals(g.headers.get("content-length"), "20", "content-length");
        assertEquals(
          g.headers.get("x-content-type-options"),
          "nosniff",
          "nosniff",
        );
        assert(
          (g.headers.get("content-disposition") ?? "").startsWith("inline"),
          `inline: ${g.headers.get("content-disposition")}`,
        );
        assert(
          (g.headers.get("cache-control") ?? "") !== "",
          "cache-control present",
        );
        assert((g.headers.get("etag") ?? "").length > 2, "etag present");
        const lm = Date.parse(g.headers.get("last-modified") ?? "");
        assert(
          !Number.isNaN(lm) && Math.abs(lm - Date.now()) < 86_400_000,
          `last-modified: ${g.headers.get("last-modified")}`,
        );
      });

      await t.step(`${prefix}: HEAD`, async () => {
        const etag = (await getFile(s, path)).headers.get("etag");
        const g = await getFile(s, path, { method: "HEAD" });
        assertEquals([g.status, g.text], [200, ""], "HEAD: 200, no body");
        assertEquals(
          g.headers.get("content-length"),
          "20",
          "HEAD content-length",
        );
        assertEquals(g.headers.get("etag"), etag, "HEAD etag");
        assert(
          (g.headers.get("content-type") ?? "").startsWith("text/plain"),
          "HEAD content-type",
        );
      });

      await t.step(`${prefix}: If-None-Match`, async () => {
        const etag = (await getFile(s, path)).headers.get("etag") ?? "";
        let g = await getFile(s, path, { headers: { "if-none-match": etag } });
        assertEquals([g.status, g.text], [304, ""], "If-None-Match → 304");
        g = await getFile(s, path, {
          headers: { "if-none-match": '"something-else"' },
        });
        assertEquals([g.status, g.text], [200, TXT], "another ETag → 200");
      });

      for (const [range, status, body, cr] of RANGES) {
        await t.step(`${prefix}: Range ${range}`, async () => {
          const g = await getFile(s, path, { headers: { range } });
          assertEquals([g.status, g.text], [status, body], `Range ${range}`);
          assertEquals(
            g.headers.get("content-range"),
            cr,
            `Content-Range of ${range}`,
          );
          assertEquals(
            g.headers.get("content-length"),
            String(body.length),
            `Content-Length of ${range}`,
          );
        });
      }
      for (const range of UNSATISFIABLE) {
        await t.step(`${prefix}: Range ${range} → 416`, async () => {
          const g = await getFile(s, path, { headers: { range } });
          assertEquals(g.status, 416, `Range ${range} is unsatisfiable`);
          assertEquals(
            g.headers.get("content-range"),
            "bytes */20",
            `Content-Range of ${range}`,
          );
        });
      }
    }

    const typed = await createWith(
      s,
      "pub",
      TYPES.map(([n, data]) => ({ name: "att", filename: n, data })),
    );
    const att = typed.att as string[];
    await t.step("content types: every file stored", () => {
      assertEquals(att.length, TYPES.length, "all stored");
    });
    for (const [i, [n, , type, disp]] of TYPES.entries()) {
      await t.step(`content type and disposition: ${n}`, async () => {
        for (const method of ["GET", "HEAD"]) {
          const g = await getFile(s, `/api/files/pub/${att[i]}`, { method });
          assertEquals(g.status, 200, `${method} ${n}`);
          const ct = g.headers.get("content-type") ?? "";
          assert(
            type.test(ct),
            `${method} ${n}: content-type ${ct} should match ${type}`,
          );
          const cd = g.headers.get("content-disposition") ?? "";
          assert(
            cd.startsWith(disp),
            `${method} ${n}: content-disposition ${
              JSON.stringify(cd)
            } should be ${disp}`,
          );
          assertEquals(
            g.headers.get("x-content-type-options"),
            "nosniff",
            `${n}: nosniff`,
          );
        }
      });
    }

    await t.step(
      "a .css file: text/css only from a field whose mime_types name it",
      async () => {
        await createEntity(s, {
          name: "styles",
          type: "base",
          fields: [
            { name: "pic", type: "file", mime_types: ["image/*"] },
            // Text passes the bytes check; text/css lets it be served as CSS.
            {
              name: "css",
              type: "file",
              mime_types: ["text/plain", "text/css"],
            },
          ],
        });
        // PNG bytes pass image/*; the name makes it a stylesheet.
        const r = await createWith(s, "styles", [
          { name: "pic", filename: "evil.css", data: PNG },
          { name: "css", filename: "site.css", data: "body{}" },
        ]);
        const token = await s.adminToken();
        const pic = await getFile(s, `/api/files/styles/${r.pic}`, { token });
        assertEquals(
          [pic.status, pic.headers.get("content-type")],
          [200, "application/octet-stream"],
          "not a stylesheet from an image field",
        );
        assert(
          (pic.headers.get("content-disposition") ?? "").startsWith(
            "attachment",
          ),
          "an attachment",
        );
        const css = await getFile(s, `/api/files/styles/${r.css}`, { token });
        assertEquals(css.status, 200);
        assert(
          (css.headers.get("content-type") ?? "").startsWith("text/css"),
          `named: served as CSS (${css.headers.get("content-type")})`,
        );
        assert(
          (css.headers.get("content-disposition") ?? "").startsWith(
            "attachment",
          ),
          "still an attachment",
        );
      },
    );
  } finally {
    await s.close();
  }
});

// Every step below only reads: the fixtures are made once per test.
forEachDb("files: unreferenced names and traversal → 404", async (t, db) => {
  const s = await startServer(db, CONFIG);
  try {
    await createEntities(s, "pub", "priv");
    const rec = await createWith(s, "pub", [
      { name: "cover", filename: "real.txt", data: TXT },
    ]);
    const privRec = await sendForm(s, "POST", "/api/v1/entities/priv", [
      // An owner-only record, written by the admin for a user id.
      { name: "owner", value: "01900000-0000-7000-8000-0000000000a1" },
      { name: "doc", filename: "secret.txt", data: "secret" },
    ], { token: await s.adminToken() });
    assertStatus(privRec, 201, "priv record");
    const stray = "stray_abcdefghij.txt";
    await Deno.writeTextFile(join(entityDir(s, "pub"), stray), "stray");

    const paths = [
      `/api/files/pub/nothere_abcdefghij.txt`,
      `/api/files/pub/${stray}`,
      `/api/v1/files/pub/${stray}`,
      `/api/files/pub/${privRec.data.doc}`,
      `/api/files/nosuchentity/${rec.cover}`,
      `/api/files/PUB/${rec.cover}`,
      `/api/files/${s.app.schemas.get("pub")!.id}/${rec.cover}`,
      `/api/files/mb_admins/${rec.cover}`,
      `/api/files/pub/..%2f..%2fmoonbase.db`,
      `/api/files/pub/..%2F..%2F..%2Fmoonbase.db`,
      `/api/files/pub/%2e%2e%2f%2e%2e%2fmoonbase.db`,
      `/api/files/pub/..%5c..%5cmoonbase.db`,
      `/api/files/pub/%2e%2e`,
      `/api/files/%2e%2e/moonbase.db`,
      `/api/files/%2e%2e/files%2f..%2fmoonbase.db`,
      `/api/v1/files/pub/..%2f..%2f.jwt_secret`,
      `/api/files/pub/${rec.cover}%00`,
      `/api/files/pub/${rec.cover}%2f..%2f..%2f..%2fmoonbase.db`,
      `/api/files/pub/.%2f${rec.cover}`,
    ];
    for (const p of paths) {
      await t.step(`404: ${p}`, async () => {
        for (const method of ["GET", "HEAD"]) {
          const g = await getFile(s, p, { method });
          assertEquals(g.status, 404, `${method} ${p}`);
          assert(
            !g.text.includes("SQLite format") &&
              !g.text.includes("stray") && !g.text.includes("secret"),
            `${p}: no file content leaks`,
          );
        }
      });
    }
    for (
      const p of [
        "/api/files/pub/../../moonbase.db",
        "/api/files/pub/../../../etc/passwd",
        "/api/files/pub/..\\..\\moonbase.db",
      ]
    ) {
      await t.step(`raw request line: ${p}`, async () => {
        const head = await rawHttp(
          s,
          `GET ${p} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
          5000,
          "\u0000never",
        );
        assert(
          /^HTTP\/1\.1 (404|400)/.test(head),
          `raw ${p}: ${head.slice(0, 100)}`,
        );
        assert(
          !head.includes("SQLite format") && !head.includes("root:"),
          `raw ${p}: no content leaks`,
        );
      });
    }
    await t.step("the referenced file is served", async () => {
      const g = await getFile(s, `/api/files/pub/${rec.cover}`);
      assertEquals(
        [g.status, g.text],
        [200, TXT],
        "the referenced file is served",
      );
    });
  } finally {
    await s.close();
  }
});
