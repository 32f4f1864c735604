/**
 * Files: what an upload may be. The size cap (413, nothing stored, with or
 * without a Content-Length, POST and PATCH; an oversized Content-Length is
 * refused before the body is read) and `mime_types`, checked against the
 * leading bytes rather than the declared type or the name.
 *
 * @module
 */

import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  type Reply,
  startServer,
} from "./_server.ts";
import {
  assertStored,
  bytesOf,
  CAP,
  CONFIG,
  count,
  createEntities,
  createWith,
  entityDir,
  file,
  filesSnapshot,
  getFile,
  HTML,
  KIB,
  MIB,
  type Part,
  PNG,
  PUBLIC,
  rawHttp,
  record,
  sendForm,
  SVG,
  walk,
} from "./_files_fixtures.ts";

const big = (size: number, name = "big.bin"): Part => ({
  name: "att",
  filename: name,
  data: bytesOf(size),
});

/** Uploads over the cap; `patch` sends them to an existing record. */
const OVER_CAP: {
  name: string;
  patch?: boolean;
  form: () => Part[] | FormData;
  stream?: boolean;
}[] = [
  {
    name: "one file over the cap (FormData)",
    form: () => {
      const fd = new FormData();
      fd.append("title", "too big");
      fd.append("cover", file(bytesOf(CAP + 1), "big.bin"));
      return fd;
    },
  },
  {
    name: "one file just over the cap",
    form: () => [{ name: "title", value: "x" }, big(CAP + 10)],
  },
  {
    name: "two files, over the cap together (Content-Length)",
    form: () => [big(600 * KIB, "a.bin"), big(600 * KIB, "b.bin")],
  },
  {
    name: "two files, over the cap together (counted)",
    form: () => [big(520 * KIB, "a.bin"), big(520 * KIB, "b.bin")],
  },
  {
    name: "one file over the cap, streamed",
    form: () => [big(CAP + 1)],
    stream: true,
  },
  {
    name: "two files over the cap together, streamed",
    form: () => [big(600 * KIB, "a.bin"), big(600 * KIB, "b.bin")],
    stream: true,
  },
  {
    name: "three files, streamed",
    form: () => [
      big(400 * KIB, "a.bin"),
      big(400 * KIB, "b.bin"),
      big(400 * KIB, "c.bin"),
    ],
    stream: true,
  },
  {
    name: "PATCH over the cap",
    patch: true,
    form: () => [{ name: "title", value: "changed" }, big(CAP + 1)],
  },
  {
    name: "PATCH over the cap, streamed",
    patch: true,
    form: () => [
      { name: "title", value: "changed" },
      big(300 * KIB, "a.bin"),
      big(800 * KIB, "b.bin"),
    ],
    stream: true,
  },
];

/** Uploads `mime_types` refuses (400 naming the field, nothing stored). */
const REFUSED: { name: string; part: Part }[] = [
  {
    name: "HTML renamed .png",
    part: { name: "pic", filename: "evil.png", data: HTML, type: "image/png" },
  },
  {
    name: "SVG renamed .png",
    part: { name: "pic", filename: "evil.png", data: SVG, type: "image/png" },
  },
  {
    name: "SVG with an XML prolog renamed .png",
    part: {
      name: "pic",
      filename: "evil.png",
      data: `<?xml version="1.0"?>\n${SVG}`,
      type: "image/png",
    },
  },
  {
    name: "SVG as .svg under image/*",
    part: {
      name: "pic",
      filename: "logo.svg",
      data: SVG,
      type: "image/svg+xml",
    },
  },
  {
    name: "plain text renamed .png",
    part: {
      name: "pic",
      filename: "notes.png",
      data: "just some text",
      type: "image/png",
    },
  },
  {
    name: "an empty file renamed .png",
    part: { name: "pic", filename: "empty.png", data: "", type: "image/png" },
  },
  {
    name: "HTML into the SVG-only field",
    part: {
      name: "vec",
      filename: "x.svg",
      data: HTML,
      type: "image/svg+xml",
    },
  },
  {
    name: "PNG into the SVG-only field",
    part: { name: "vec", filename: "x.svg", data: PNG, type: "image/svg+xml" },
  },
];

// One server; each row compares the disk and the record counts before and
// after its own request, and the cap rows only read their shared target.
forEachDb("files: upload cap and mime_types", async (t, db) => {
  const s = await startServer(db, CONFIG);
  try {
    await createEntities(s, "pub", "imgs");
    const admin = await s.adminToken();
    const target = await createWith(s, "pub", [
      { name: "title", value: "cap target" },
    ]);

    for (const c of OVER_CAP) {
      await t.step(`413, nothing stored: ${c.name}`, async () => {
        const before = await filesSnapshot(s);
        const n0 = await count(s, "pub");
        const path = c.patch
          ? `/api/v1/entities/pub/${target.id}`
          : "/api/v1/entities/pub";
        let r: Reply;
        try {
          r = await sendForm(s, c.patch ? "PATCH" : "POST", path, c.form(), {
            token: admin,
            stream: c.stream,
          });
        } catch (err) {
          throw new Error(`the request failed instead of a 413 answer: ${err}`);
        }
        assertStatus(r, 413, c.name);
        assertEquals(await filesSnapshot(s), before, "no file stored");
        assertEquals(await count(s, "pub"), n0, "no record created");
        assertEquals(
          (await record(s, "pub", target.id)).title,
          "cap target",
          "record unchanged",
        );
      });
    }

    await t.step("a file of exactly the cap is accepted", async () => {
      const r = await sendForm(s, "POST", "/api/v1/entities/pub", [
        big(CAP, "exact.bin"),
      ], { token: admin });
      assertStatus(r, 201, "a file of exactly the cap");
      const st = await Deno.stat(join(entityDir(s, "pub"), r.data.att[0]));
      assertEquals(st.size, CAP, "stored size");
    });

    await t.step(
      "Content-Length above the cap: 413 before the body is read",
      async () => {
        const before = await filesSnapshot(s);
        const n0 = await count(s, "pub");
        const boundary = "xyzBOUNDARYxyz";
        // The body is never sent in full: a server that waited for it could
        // only end with its body deadline (a 408), never a 413. The 30 s is
        // a deadline, not a claim about speed.
        const head = await rawHttp(
          s,
          `POST /api/v1/entities/pub HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${admin}\r\n` +
            `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${
              100 * MIB
            }\r\n\r\n` +
            `--${boundary}\r\nContent-Disposition: form-data; name="cover"; filename="huge.bin"\r\n\r\naaaa`,
          30_000,
        );
        assert(
          head.startsWith("HTTP/1.1 413"),
          `expected a 413 while the body is unsent, got ${
            JSON.stringify(head.slice(0, 200))
          }`,
        );
        assertEquals(await filesSnapshot(s), before, "no file stored");
        assertEquals(await count(s, "pub"), n0, "no record created");
      },
    );

    const imgs = (parts: Part[]) =>
      sendForm(s, "POST", "/api/v1/entities/imgs", parts, { token: admin });

    await t.step("mime_types: a PNG passes image/*", async () => {
      const r = await imgs([
        { name: "pic", filename: "pic.png", data: PNG, type: "image/png" },
      ]);
      assertStatus(r, 201, "a PNG passes image/*");
      assertStored(r.data.pic, "pic");
    });

    await t.step("mime_types: PNG bytes pass whatever the type", async () => {
      const r = await imgs([
        { name: "pic", filename: "pic.bin", data: PNG, type: "text/html" },
      ]);
      assertStatus(r, 201, "PNG bytes pass whatever the declared type");
    });

    for (const c of REFUSED) {
      await t.step(`mime_types: 400, nothing stored: ${c.name}`, async () => {
        const dir = entityDir(s, "imgs");
        const before = await walk(dir);
        const n0 = await count(s, "imgs");
        const r = await imgs([c.part]);
        assertStatus(r, 400, c.name);
        assert(
          r.data?.fields?.[c.part.name],
          `data.fields names ${c.part.name}: ${r.text}`,
        );
        assertEquals(await walk(dir), before, "nothing left on disk");
        assertEquals(await count(s, "imgs"), n0, "no record");
      });
    }

    await t.step(
      "mime_types: an SVG named explicitly is accepted",
      async () => {
        const r = await imgs([
          {
            name: "vec",
            filename: "logo.svg",
            data: SVG,
            type: "image/svg+xml",
          },
        ]);
        assertStatus(r, 201, "SVG named explicitly is accepted");
        const g = await getFile(s, `/api/files/imgs/${r.data.vec}`);
        assertEquals(g.status, 200, "served");
        assert(
          (g.headers.get("content-disposition") ?? "").startsWith("attachment"),
          "the SVG is an attachment",
        );
        // The field names the type: served as it, in a sandbox.
        assertEquals(g.headers.get("content-type"), "image/svg+xml");
        assert(
          (g.headers.get("content-security-policy") ?? "").includes("sandbox"),
          "sandboxed",
        );
      },
    );

    // Values that could never match a file are refused at save, saying what
    // to write, on create and on PATCH; nothing is saved.
    const MALFORMED: [unknown, RegExp][] = [
      [["*/*"], /"\*\/\*" is not a file type; leave mime_types out/],
      [["image/*", "*/*"], /"\*\/\*" is not a file type/],
      [[""], /every entry must be a non-empty string/],
      [["image"], /"image" is not a media type; write type\/subtype/],
      [["image/"], /"image\/" is not a media type/],
      [["*/png"], /"\*\/png" is not a media type/],
      [["image/png; q=1"], /is not a media type/],
      [["image/png", "IMAGE/PNG"], /entries must be unique/],
      [[], /must be a list of 1-100 strings/],
      ["image/*", /must be a list/],
    ];
    for (const [i, [mime_types, message]] of MALFORMED.entries()) {
      await t.step(
        `mime_types ${JSON.stringify(mime_types)}: 400 at save`,
        async () => {
          // Names of its own: the case stands alone even when another failed.
          const field = { name: `f${i}`, type: "file", mime_types };
          const created = await s.request("POST", "/api/v1/schemas", {
            token: admin,
            body: { name: `mime_bad${i}`, type: "base", fields: [field] },
          });
          assertStatus(created, 400, "create");
          assert(message.test(created.error), created.error);
          assert(
            created.error.startsWith(
              `Cannot accept field "f${i}".mime_types: `,
            ),
            created.error,
          );
          const patched = await s.request("PATCH", "/api/v1/schemas/imgs", {
            token: admin,
            body: { fields: [field] },
          });
          assertStatus(patched, 400, "PATCH");
          assert(message.test(patched.error), patched.error);
          const got = await s.request("GET", "/api/v1/schemas/imgs", {
            token: admin,
          });
          assertEquals(
            got.data.fields.some((f: { name: string }) =>
              f.name === field.name
            ),
            false,
            "no field added",
          );
        },
      );
    }

    await t.step("mime_types match whatever their case", async () => {
      const r = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name: "mime_case",
          type: "base",
          fields: [{ name: "pic", type: "file", mime_types: ["Image/PNG"] }],
          rules: { add: PUBLIC },
        },
      });
      assertStatus(r, 201, "Image/PNG saved");
      const up = await sendForm(s, "POST", "/api/v1/entities/mime_case", [
        { name: "pic", filename: "a.png", data: PNG, type: "image/png" },
      ], { token: admin });
      assertStatus(up, 201, "a PNG passes Image/PNG");
    });
  } finally {
    await s.close();
  }
});
