/**
 * Files: thumbnails (`?thumb=<W>x<H>[t|b|f]`). Every mode on JPEG, PNG, GIF
 * (first frame) and WebP, checked by reading the result back; sizes a field
 * lists for everyone, others for admins only; made once and stored beside
 * the original; ETag / 304 and the original's Cache-Control; the original's
 * protection; removed with the original (and only then); bombs and broken
 * images answer the original.
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
  type TestServer,
} from "./_server.ts";
import {
  CONFIG,
  createEntity,
  entityDir,
  exists,
  sendForm,
  userOf,
} from "./_files_fixtures.ts";
import { type Format, FORMATS, hue, Images } from "./_images.ts";
import { sweepFiles } from "../lib/files/sweep.ts";

const PUBLIC = { mode: "public", expr: "" };
const OWNER = { mode: "custom", expr: "record.owner == auth.id" };
const SIZES = ["100x100", "100x100t", "100x100b", "100x100f", "0x100", "100x0"];

/** What each size makes of a 200 × 400 image, top half red, bottom half blue. */
const EXPECTED: Record<string, [number, number, string, string]> = {
  // width, height, colour a quarter down, colour three quarters down
  "100x100": [100, 100, "red", "blue"],
  "100x100t": [100, 100, "red", "red"],
  "100x100b": [100, 100, "blue", "blue"],
  "100x100f": [50, 100, "red", "blue"],
  "0x100": [50, 100, "red", "blue"],
  "100x0": [100, 200, "red", "blue"],
};

const TYPE: Record<Format, string> = {
  jpeg: "image/jpeg",
  png: "image/png",
  gif: "image/gif",
  webp: "image/webp",
};
const EXT: Record<Format, string> = {
  jpeg: "jpg",
  png: "png",
  gif: "gif",
  webp: "webp",
};

interface Got {
  status: number;
  headers: Headers;
  bytes: Uint8Array;
}

async function get(
  s: TestServer,
  path: string,
  o: { token?: string; headers?: Record<string, string> } = {},
): Promise<Got> {
  const headers: Record<string, string> = { ...o.headers };
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  const res = await fetch(s.url + path, { headers });
  return {
    status: res.status,
    headers: res.headers,
    bytes: new Uint8Array(await res.arrayBuffer()),
  };
}

function same(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** The ledger's names of an entity (the files this database wrote). */
async function ledger(s: TestServer, entity: string): Promise<string[]> {
  const id = s.app.schemas.get(entity)!.id;
  const rows = await s.app.storage.query(
    `SELECT "name" FROM "mb_files" WHERE "entity_id" = ? ORDER BY "name"`,
    [id],
  );
  return rows.map((r) => String(r.name));
}

/** The names in an entity's directory. */
async function onDisk(s: TestServer, entity: string): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(entityDir(s, entity))) out.push(e.name);
  } catch { /* no directory yet */ }
  return out.sort();
}

async function upload(
  s: TestServer,
  entity: string,
  field: string,
  filename: string,
  data: Uint8Array,
  extra: { name: string; value: string }[] = [],
  token?: string,
): Promise<{ id: string; name: string }> {
  const r = await sendForm(s, "POST", `/api/v1/entities/${entity}`, [
    ...extra,
    { name: field, filename, data },
  ], { token: token ?? await s.adminToken() });
  assertStatus(r, 201, `upload ${filename}`);
  return { id: r.data.id, name: r.data[field] };
}

forEachDb("files: thumbnails", async (t, db) => {
  const s = await startServer(db, CONFIG);
  const images = new Images();
  try {
    const admin = await s.adminToken();
    await createEntity(s, {
      name: "pics",
      type: "base",
      fields: [
        { name: "img", type: "file", thumbs: SIZES },
        { name: "att", type: "files", thumbs: ["50x50"] },
      ],
      rules: { list: PUBLIC, get: PUBLIC },
    });
    await createEntity(s, {
      name: "users",
      type: "auth",
      fields: [],
    });
    await createEntity(s, {
      name: "mine",
      type: "base",
      fields: [{ name: "owner", type: "string" }, {
        name: "img",
        type: "file",
        thumbs: ["100x100"],
      }],
      rules: { list: OWNER, get: OWNER, add: OWNER },
    });

    await t.step(
      "a field's thumbs are validated when the schema is saved",
      async () => {
        const bad: [unknown, RegExp][] = [
          [["abc"], /"abc" is not a size/],
          [["0x0"], /0x0 has no size/],
          [["5000x10"], /5000x10 is too large; each side is at most 4096/],
          [["0x100f"], /0x100f keeps the ratio/],
          [["100x100", "100x100"], /entries must be unique/],
          [[], /must be a list of 1-20 strings/],
          ["100x100", /must be a list/],
        ];
        for (const [thumbs, message] of bad) {
          const r = await s.request("POST", "/api/v1/schemas", {
            token: admin,
            body: {
              name: "badthumbs",
              type: "base",
              fields: [{ name: "f", type: "file", thumbs }],
            },
          });
          assertStatus(r, 400, JSON.stringify(thumbs));
          assert(
            message.test(r.error),
            `${JSON.stringify(thumbs)}: ${r.error}`,
          );
        }
        const r = await s.request("POST", "/api/v1/schemas", {
          token: admin,
          body: {
            name: "badthumbs",
            type: "base",
            fields: [{ name: "s", type: "string", thumbs: ["10x10"] }],
          },
        });
        assertStatus(r, 400, "thumbs on a string field");
        assert(/unknown key "thumbs"/.test(r.error), r.error);
        const got = await s.request("GET", "/api/v1/schemas/pics", {
          token: admin,
        });
        assertEquals(
          got.data.fields.find((f: { name: string }) => f.name === "img")
            .thumbs,
          SIZES,
        );
      },
    );

    const originals = {} as Record<Format, { id: string; name: string }>;
    for (const format of FORMATS) {
      // GIF and WebP animated: the thumbnail is of the first frame.
      const frames = format === "gif" || format === "webp" ? 2 : 1;
      const data = await images.make(format, 200, 400, frames);
      originals[format] = await upload(
        s,
        "pics",
        "img",
        `photo.${EXT[format]}`,
        data,
      );
      await t.step(
        `${format}: every mode, checked by reading it back`,
        async () => {
          const { name } = originals[format];
          for (const size of SIZES) {
            const g = await get(s, `/api/files/pics/${name}?thumb=${size}`);
            assertEquals(g.status, 200, `${format} ${size}`);
            assertEquals(g.headers.get("content-type"), TYPE[format]);
            const [w, h, top, bottom] = EXPECTED[size];
            const info = await images.read(g.bytes, [
              [Math.floor(w / 2), Math.floor(h / 4)],
              [Math.floor(w / 2), Math.floor((3 * h) / 4)],
            ]);
            assertEquals(
              [info.width, info.height, info.pages],
              [w, h, 1],
              `${format} ${size}: size and one frame`,
            );
            assert(
              info.loader.startsWith(format === "jpeg" ? "jpeg" : format),
              `${format} ${size}: read as ${info.loader}`,
            );
            assertEquals(
              info.points.map(hue),
              [top, bottom],
              `${format} ${size}: which part of the image`,
            );
          }
        },
      );
    }

    await t.step(
      "made once, stored beside the original and recorded",
      async () => {
        const { name } = originals.png;
        const path = `/api/files/pics/${name}?thumb=100x100`;
        const first = await get(s, path);
        const files = await onDisk(s, "pics");
        const rows = await ledger(s, "pics");
        const thumb = `${name}.100x100.thumb.png`;
        assert(files.includes(thumb), `beside the original: ${files}`);
        assert(rows.includes(thumb), "recorded in the ledger");
        assertEquals(
          files.filter((f) => f.startsWith(name + ".")).length,
          SIZES.length,
          "one file per size",
        );
        const stat = await Deno.stat(join(entityDir(s, "pics"), thumb));
        const again = await get(s, path);
        assertEquals(again.status, 200);
        assert(same(first.bytes, again.bytes), "the same bytes");
        assertEquals(again.headers.get("etag"), first.headers.get("etag"));
        assertEquals(await onDisk(s, "pics"), files, "no file made");
        assertEquals(await ledger(s, "pics"), rows, "no row written");
        assertEquals(
          (await Deno.stat(join(entityDir(s, "pics"), thumb))).mtime?.getTime(),
          stat.mtime?.getTime(),
          "the stored thumbnail, not a new one",
        );
        // Concurrent first requests of one size make it once too.
        const many = await Promise.all(
          Array.from(
            { length: 4 },
            () => get(s, `/api/files/pics/${name}?thumb=100x0`),
          ),
        );
        for (const g of many) assert(same(g.bytes, many[0].bytes), "the same");
        assertEquals(
          (await onDisk(s, "pics")).filter((f) => f.includes(".tmp_")),
          [],
          "no temporary file left",
        );
      },
    );

    await t.step("ETag / 304 and the original's Cache-Control", async () => {
      const { name } = originals.jpeg;
      const original = await get(s, `/api/files/pics/${name}`);
      const g = await get(s, `/api/files/pics/${name}?thumb=100x100f`);
      const etag = g.headers.get("etag")!;
      assert(etag && etag !== original.headers.get("etag"), "its own ETag");
      assertEquals(
        g.headers.get("cache-control"),
        original.headers.get("cache-control"),
      );
      assertEquals(g.headers.get("x-content-type-options"), "nosniff");
      const not = await get(s, `/api/files/pics/${name}?thumb=100x100f`, {
        headers: { "if-none-match": etag },
      });
      assertEquals(not.status, 304);
      assertEquals(not.bytes.length, 0);
      // The original's ETag does not match the thumbnail.
      const other = await get(s, `/api/files/pics/${name}?thumb=100x100f`, {
        headers: { "if-none-match": original.headers.get("etag")! },
      });
      assertEquals(other.status, 200);
    });

    await t.step(
      "listed sizes for everyone, others for admins only",
      async () => {
        const { name } = originals.webp;
        const original = await get(s, `/api/files/pics/${name}`);
        const u = await userOf(s, "thumbs@files.test");
        for (const [who, token] of [["guest", undefined], ["user", u.token]]) {
          const g = await get(s, `/api/files/pics/${name}?thumb=64x64`, {
            token,
          });
          assertEquals(g.status, 200, who);
          assert(same(g.bytes, original.bytes), `${who}: the original`);
          assertEquals(g.headers.get("etag"), original.headers.get("etag"));
        }
        assert(
          !(await onDisk(s, "pics")).some((f) => f.includes(".64x64.")),
          "nothing made for them",
        );
        for (
          const [how, path, token] of [
            ["header", `/api/files/pics/${name}?thumb=64x64`, admin],
            ["?token=", `/api/files/pics/${name}?thumb=64x32&token=${admin}`],
          ] as const
        ) {
          const g = await get(s, path, { token });
          assertEquals(g.status, 200, how);
          const info = await images.read(g.bytes);
          assertEquals(
            [info.width, info.height],
            [64, path.includes("64x32") ? 32 : 64],
            `admin by ${how}`,
          );
        }
        // A bad token on a public file: the original, as without one.
        const bad = await get(s, `/api/files/pics/${name}?thumb=65x65`, {
          token: "garbage",
        });
        assertEquals(bad.status, 200);
        assert(same(bad.bytes, original.bytes), "a bad token: the original");
        // A files field's own list.
        const att = await sendForm(s, "POST", "/api/v1/entities/pics", [
          {
            name: "att",
            filename: "a.png",
            data: await images.make("png", 200, 400),
          },
        ], { token: admin });
        assertStatus(att, 201, "files upload");
        const a = att.data.att[0];
        const listed = await get(s, `/api/files/pics/${a}?thumb=50x50`);
        assertEquals(
          [(await images.read(listed.bytes)).width],
          [50],
          "listed on att",
        );
        const img = await get(s, `/api/files/pics/${a}?thumb=100x100`);
        assertEquals(
          (await images.read(img.bytes)).width,
          200,
          "img's sizes are not att's",
        );
      },
    );

    await t.step("a malformed size is a 400, for everyone", async () => {
      const { name } = originals.png;
      for (const size of ["abc", "0x0", "5000x5000", "100x100x", "-1x5", ""]) {
        for (const token of [undefined, admin]) {
          const g = await get(
            s,
            `/api/files/pics/${name}?thumb=${encodeURIComponent(size)}`,
            { token },
          );
          assertEquals(g.status, 400, `"${size}"`);
          const body = JSON.parse(new TextDecoder().decode(g.bytes));
          assert(/^Cannot make a thumbnail: /.test(body.error), body.error);
        }
      }
    });

    await t.step("a non-image answers the original", async () => {
      const text = new TextEncoder().encode("just some text, not an image");
      const { name } = await upload(s, "pics", "img", "notes.txt", text);
      for (const token of [undefined, admin]) {
        const g = await get(s, `/api/files/pics/${name}?thumb=100x100`, {
          token,
        });
        assertEquals(g.status, 200);
        assert(same(g.bytes, text), "the text");
        assertEquals(
          g.headers.get("content-type"),
          "text/plain; charset=utf-8",
        );
      }
    });

    await t.step(
      "bombs and broken images answer the original, never a 500",
      async () => {
        // A GIF whose header says 65535 × 65535 (4 gigapixels, ~17 GB to
        // decode) in 35 bytes.
        const bomb = new Uint8Array([
          ...new TextEncoder().encode("GIF89a"),
          ...[255, 255, 255, 255, 0x80, 0, 0, 0, 0, 0, 255, 255, 255],
          ...[0x2c, 0, 0, 0, 0, 255, 255, 255, 255, 0],
          ...[2, 2, 0x44, 0x01, 0, 0x3b],
        ]);
        const broken = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3, 4]);
        const truncated = (await images.make("png", 200, 400)).slice(0, 60);
        for (
          const [what, data, file] of [
            ["bomb", bomb, "bomb.gif"],
            ["broken", broken, "broken.jpg"],
            ["truncated", truncated, "cut.png"],
          ] as const
        ) {
          const { name } = await upload(s, "pics", "img", file, data);
          for (const token of [undefined, admin]) {
            // Twice: the second answer comes from the remembered failure.
            for (let i = 0; i < 2; i++) {
              const g = await get(s, `/api/files/pics/${name}?thumb=100x100`, {
                token,
              });
              assertEquals(g.status, 200, what);
              assert(same(g.bytes, data), `${what}: the original`);
            }
          }
          assert(
            !(await onDisk(s, "pics")).some((f) => f.startsWith(name + ".")),
            `${what}: nothing stored`,
          );
        }
      },
    );

    await t.step(
      "the original's protection: same answer as the original",
      async () => {
        const u1 = await userOf(s, "owner@files.test");
        const u2 = await userOf(s, "other@files.test");
        const { name } = await upload(
          s,
          "mine",
          "img",
          "me.png",
          await images.make("png", 200, 400),
          [{ name: "owner", value: u1.id }],
          u1.token,
        );
        const path = `/api/files/mine/${name}`;
        const cases: [string, string | undefined, string, number][] = [
          ["guest", undefined, "", 404],
          ["another user", u2.token, "", 404],
          ["a garbage token", "garbage", "", 401],
          ["another user by ?token=", undefined, `&token=${u2.token}`, 404],
        ];
        for (const [who, token, query, status] of cases) {
          for (const thumb of ["100x100", "64x64"]) {
            const plain = await get(
              s,
              path + (query ? "?" + query.slice(1) : ""),
              {
                token,
              },
            );
            const g = await get(s, `${path}?thumb=${thumb}${query}`, { token });
            assertEquals([plain.status, g.status], [status, status], who);
          }
        }
        assert(
          !(await onDisk(s, "mine")).some((f) => f.startsWith(name + ".")),
          "nothing made for them",
        );
        const own = await get(s, `${path}?thumb=100x100`, { token: u1.token });
        assertEquals(own.status, 200);
        assertEquals(own.headers.get("cache-control"), "private, no-cache");
        assertEquals((await images.read(own.bytes)).width, 100, "the owner");
        const ft = await s.request("POST", "/api/v1/files/token", {
          token: u1.token,
        });
        const byFileToken = await get(
          s,
          `${path}?thumb=100x100&token=${encodeURIComponent(ft.data.token)}`,
        );
        assertEquals(byFileToken.status, 200, "a file token");
        assert(same(byFileToken.bytes, own.bytes), "the stored thumbnail");
        const unlisted = await get(s, `${path}?thumb=64x64`, {
          token: u1.token,
        });
        assertEquals(
          (await images.read(unlisted.bytes)).width,
          200,
          "an unlisted size: the original, for the owner too",
        );
      },
    );

    await t.step(
      "the sweep keeps the thumbnails of referenced files",
      async () => {
        const before = await onDisk(s, "pics");
        // Every recorded file is old enough for this sweep.
        await sweepFiles(
          s.app.storage,
          s.app.schemas,
          s.app.files,
          () => Date.now() + 3_600_000,
        );
        assertEquals(await onDisk(s, "pics"), before);
      },
    );

    await t.step(
      "removed with the original (replaced or deleted), nothing else",
      async () => {
        const keep = originals.gif.name;
        const { id, name } = originals.png;
        const thumbsOf = async (n: string) =>
          (await onDisk(s, "pics")).filter((f) => f.startsWith(n + "."));
        const kept = await thumbsOf(keep);
        assert(kept.length > 0, "the GIF has thumbnails");
        assert((await thumbsOf(name)).length > 0, "the PNG has thumbnails");
        // Replaced: the old file and its thumbnails go after the commit.
        const r = await sendForm(s, "PATCH", `/api/v1/entities/pics/${id}`, [
          {
            name: "img",
            filename: "new.png",
            data: await images.make("png", 200, 400),
          },
        ], { token: admin });
        assertStatus(r, 200, "replace");
        assertEquals(await thumbsOf(name), [], "replaced: thumbnails gone");
        assert(!await exists(join(entityDir(s, "pics"), name)), "and it");
        assert(
          !(await ledger(s, "pics")).some((n) => n.startsWith(name + ".")),
          "their rows gone",
        );
        const fresh = r.data.img;
        await get(s, `/api/files/pics/${fresh}?thumb=100x100`);
        assertEquals((await thumbsOf(fresh)).length, 1);
        // Deleted: the same.
        const d = await s.request("DELETE", `/api/v1/entities/pics/${id}`, {
          token: admin,
        });
        assertStatus(d, 204, "delete");
        assertEquals(await thumbsOf(fresh), [], "deleted: thumbnails gone");
        assertEquals(await thumbsOf(keep), kept, "other files' stay");
        assert(
          await exists(join(entityDir(s, "pics"), keep)),
          "other originals stay",
        );
      },
    );
  } finally {
    images.close();
    await s.close();
  }
});
