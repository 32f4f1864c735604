/**
 * Files in S3 (`--files s3://…`, a real S3 server: tests/_s3.ts), from the
 * outside, on both databases: every file behaves as on disk. Uploads (one
 * PUT, and a multipart upload above the part size), downloads with their
 * headers, ETag/304, Range/206/416, replace and delete (the object goes
 * after the commit), a write that fails (no object, no ledger row),
 * protection and file tokens, thumbnails (made once, stored beside the
 * original in the bucket, served from it with the original's headers and
 * protection, removed with it), key safety (no input leaves the prefix),
 * and the ledger as the one authority for removal: objects someone else put in
 * the bucket, and another database's under the same prefix, survive every
 * removal and sweep.
 *
 * @module
 */

import { createHash } from "node:crypto";
import {
  assert,
  assertEquals,
  assertStatus,
  DATABASES,
  startServer,
  type TestServer,
} from "./_server.ts";
import {
  count,
  createEntities,
  createWith,
  getFile,
  HTML,
  MIB,
  PNG,
  sendForm,
  TXT,
  userOf,
} from "./_files_fixtures.ts";
import { hasS3, S3_KEY, type S3Peer, startS3 } from "./_s3.ts";
import { hue, Images } from "./_images.ts";
import { sweepFiles } from "../lib/files/sweep.ts";

const PREFIX = "shop/prod";

function s3Config(s3: S3Peer, bucket: string, prefix = PREFIX) {
  return {
    trustProxy: true,
    files: s3.filesUrl(bucket, prefix),
    filesCredentials: S3_KEY,
  };
}

/** Keys of an entity's files in the bucket (relative to the entity). */
async function keysOf(
  s3: S3Peer,
  bucket: string,
  s: TestServer,
  entity: string,
): Promise<string[]> {
  const id = s.app.schemas.get(entity)!.id;
  const root = `${PREFIX}/${id}/`;
  return (await s3.keys(bucket, root)).map((k) => k.slice(root.length));
}

let shared: Images | undefined;

/**
 * The libvips worker that makes and reads the thumbnail step's images: one
 * for both databases' cases (loading libvips is most of that step's work),
 * started when a case starts so that it loads while the first steps run.
 */
function sharedImages(): Images {
  return shared ??= new Images();
}

function sha(bytes: Uint8Array | string): string {
  return createHash("sha256").update(bytes).digest("hex");
}

for (const db of DATABASES) {
  Deno.test({
    name: `files in S3: upload, serve, replace, delete, protect [${db}]`,
    ignore: !hasS3(),
    sanitizeOps: false,
    sanitizeResources: false,
    async fn(t) {
      sharedImages();
      const s3 = await startS3();
      const bucket = await s3.createBucket();
      const s = await startServer(db, {
        ...s3Config(s3, bucket),
        maxUploadSize: 12 * MIB,
      });
      try {
        await createEntities(s, "pub", "priv", "users");
        const pubId = s.app.schemas.get("pub")!.id;

        await t.step("health: files ok, kind s3", async () => {
          const r = await s.request("GET", "/api/v1/health");
          assertStatus(r, 200);
          assertEquals([r.data.files, r.data.files_kind], ["ok", "s3"]);
          assert(!r.text.includes(bucket), "the bucket is not told");
        });

        await t.step(
          "upload and serve: bytes, headers, 304, ranges",
          async () => {
            const rec = await createWith(s, "pub", [
              { name: "cover", filename: "notes.txt", data: TXT },
            ]);
            const name = rec.cover as string;
            assertEquals(await keysOf(s3, bucket, s, "pub"), [name]);
            const path = `/api/files/pub/${name}`;
            const g = await getFile(s, path);
            assertEquals([g.status, g.text], [200, TXT]);
            assert(
              (g.headers.get("content-type") ?? "").startsWith("text/plain"),
            );
            assertEquals(g.headers.get("x-content-type-options"), "nosniff");
            assertEquals(g.headers.get("content-length"), "20");
            assertEquals(g.headers.get("accept-ranges"), "bytes");
            const etag = g.headers.get("etag") ?? "";
            assert(etag.length > 2, "an ETag");
            const h = await getFile(s, path, { method: "HEAD" });
            assertEquals([h.status, h.text, h.headers.get("etag")], [
              200,
              "",
              etag,
            ]);
            const nm = await getFile(s, path, {
              headers: { "if-none-match": etag },
            });
            assertEquals([nm.status, nm.text], [304, ""]);
            for (
              const [range, status, body, cr] of [
                ["bytes=0-4", 206, "01234", "bytes 0-4/20"],
                ["bytes=-5", 206, "fghij", "bytes 15-19/20"],
                ["bytes=5-", 206, TXT.slice(5), "bytes 5-19/20"],
                ["bytes=15-100", 206, "fghij", "bytes 15-19/20"],
              ] as const
            ) {
              const r = await getFile(s, path, { headers: { range } });
              assertEquals(
                [r.status, r.text, r.headers.get("content-range")],
                [status, body, cr],
                range,
              );
            }
            const bad = await getFile(s, path, {
              headers: { range: "bytes=20-" },
            });
            assertEquals(
              [bad.status, bad.headers.get("content-range")],
              [416, "bytes */20"],
            );
          },
        );

        await t.step(
          "one request to S3 per download: a GET with the range asked; a HEAD or a revalidation only the head",
          async () => {
            const rec = await createWith(s, "pub", [
              { name: "cover", filename: "once.txt", data: TXT },
            ]);
            const name = rec.cover as string;
            const key = `${PREFIX}/${pubId}/${name}`;
            const path = `/api/files/pub/${name}`;
            const whole = await getFile(s, path);
            assertEquals([whole.status, whole.text], [200, TXT]);
            const etag = whole.headers.get("etag") ?? "";
            const asked: [Parameters<typeof getFile>[2], number][] = [
              [{ headers: { range: "bytes=5-9" } }, 206],
              [{ headers: { range: "bytes=-5" } }, 206],
              [{ method: "HEAD" }, 200],
              [{ headers: { "if-none-match": etag } }, 304],
              [{ headers: { range: "bytes=2-3", "if-range": etag } }, 206],
              [{ headers: { range: "bytes=20-" } }, 416],
            ];
            for (const [init, status] of asked) {
              const r = await getFile(s, path, init);
              assertEquals(r.status, status, JSON.stringify(init));
            }
            const seen = (await s3.requests(bucket)).filter((q) =>
              q.key === key
            ).map((q) => `${q.method} ${q.range ?? "-"} ${q.status}`);
            assertEquals(seen, [
              "PUT - 200",
              "GET - 200",
              "GET bytes=5-9 206",
              "GET bytes=-5 206",
              "HEAD - 200",
              "HEAD - 200",
              "GET bytes=2-3 206",
              // The one case of two: S3's 416 does not tell the size.
              "GET bytes=20- 416",
              "HEAD - 200",
            ]);
          },
        );

        await t.step(
          "active types: attachment, octet-stream, sandbox",
          async () => {
            const rec = await createWith(s, "pub", [
              { name: "cover", filename: "page.html", data: HTML },
            ]);
            const g = await getFile(s, `/api/files/pub/${rec.cover}`);
            assertEquals(g.status, 200);
            assertEquals(
              g.headers.get("content-type"),
              "application/octet-stream",
            );
            assert(
              (g.headers.get("content-disposition") ?? "").startsWith(
                "attachment",
              ),
            );
            assert(
              (g.headers.get("content-security-policy") ?? "").includes(
                "sandbox",
              ),
            );
          },
        );

        await t.step(
          "a file above the part size: multipart, whole",
          async () => {
            const big = new Uint8Array(9 * MIB + 123);
            for (let i = 0; i < big.length; i += 4096) {
              big[i] = (i / 4096) & 0xff;
            }
            const rec = await createWith(s, "pub", [
              { name: "cover", filename: "big.bin", data: big },
            ]);
            const res = await fetch(`${s.url}/api/files/pub/${rec.cover}`);
            const got = new Uint8Array(await res.arrayBuffer());
            assertEquals([res.status, got.length], [200, big.length]);
            assertEquals(sha(got), sha(big));
            const part = await getFile(s, `/api/files/pub/${rec.cover}`, {
              headers: { range: `bytes=${8 * MIB - 2}-${8 * MIB + 1}` },
            });
            assertEquals(part.status, 206);
            const stored = await s3.get(
              bucket,
              `${PREFIX}/${pubId}/${rec.cover}`,
            );
            assertEquals(stored?.length, big.length);
            // S3 tags an object sent in N parts "<md5 of the parts' md5s>-N".
            const head = await s3.client.fetch(
              `${s3.endpoint}/${bucket}/${PREFIX}/${pubId}/${rec.cover}`,
              { method: "HEAD" },
            );
            assert(
              /-2"$/.test(head.headers.get("etag") ?? ""),
              `sent in two parts: ${head.headers.get("etag")}`,
            );
          },
        );

        await t.step(
          "replace and delete: the old object goes after the commit",
          async () => {
            const rec = await createWith(s, "pub", [
              { name: "cover", filename: "a.png", data: PNG },
            ]);
            const first = rec.cover as string;
            const r = await sendForm(
              s,
              "PATCH",
              `/api/v1/entities/pub/${rec.id}`,
              [
                { name: "cover", filename: "b.png", data: PNG },
              ],
              { token: await s.adminToken() },
            );
            assertStatus(r, 200);
            const second = r.data.cover as string;
            const keys = await keysOf(s3, bucket, s, "pub");
            assert(!keys.includes(first), "the replaced object is gone");
            assert(keys.includes(second), "the new one is there");
            assertStatus(
              await s.request("DELETE", `/api/v1/entities/pub/${rec.id}`, {
                token: await s.adminToken(),
              }),
              204,
            );
            assert(
              !(await keysOf(s3, bucket, s, "pub")).includes(second),
              "deleted",
            );
            assertEquals(
              (await getFile(s, `/api/files/pub/${second}`)).status,
              404,
            );
          },
        );

        await t.step(
          "a failed write leaves no object and no ledger row",
          async () => {
            const before = await keysOf(s3, bucket, s, "pub");
            const records = await count(s, "pub");
            // A file, then a value the field refuses: the whole write fails.
            const r = await sendForm(s, "POST", "/api/v1/entities/pub", [
              { name: "cover", filename: "x.txt", data: TXT },
              { name: "n", value: "not a number" },
            ], { token: await s.adminToken() });
            assertStatus(r, 400);
            // Too large: 413 mid-stream, in one PUT's range and past a part.
            const huge = await sendForm(s, "POST", "/api/v1/entities/pub", [
              {
                name: "cover",
                filename: "huge.bin",
                data: new Uint8Array(13 * MIB),
              },
            ], { token: await s.adminToken(), stream: true });
            assertStatus(huge, 413);
            assertEquals(await keysOf(s3, bucket, s, "pub"), before);
            assertEquals(await count(s, "pub"), records);
            const rows = await s.app.storage.query(
              `SELECT "name" FROM "mb_files" WHERE "entity_id" = ?`,
              [pubId],
            );
            assertEquals(
              rows.map((x) => String(x.name)).sort(),
              before,
              "the ledger records exactly the objects",
            );
          },
        );

        await t.step("protection and file tokens", async () => {
          const alice = await userOf(s, `alice-${db}@example.com`);
          const bob = await userOf(s, `bob-${db}@example.com`);
          const mk = async (u: { id: string; token: string }) => {
            const r = await sendForm(s, "POST", "/api/v1/entities/priv", [
              { name: "owner", value: u.id },
              { name: "doc", filename: "secret.txt", data: `of ${u.id}` },
            ], { token: u.token });
            assertStatus(r, 201);
            return r.data.doc as string;
          };
          const aliceDoc = await mk(alice), bobDoc = await mk(bob);
          const path = (n: string) => `/api/files/priv/${n}`;
          assertEquals(
            (await getFile(s, path(aliceDoc))).status,
            404,
            "a guest",
          );
          assertEquals(
            (await getFile(s, path(aliceDoc), { token: alice.token })).text,
            `of ${alice.id}`,
          );
          const ft = await s.request("POST", "/api/v1/files/token", {
            token: alice.token,
          });
          assertStatus(ft, 200);
          const tok = ft.data.token as string;
          assertEquals(
            (await getFile(s, `${path(aliceDoc)}?token=${tok}`)).status,
            200,
            "alice's file token on her file",
          );
          assertEquals(
            (await getFile(s, `${path(bobDoc)}?token=${tok}`)).status,
            404,
            "alice's file token on bob's file",
          );
          assertEquals(
            (await getFile(s, `${path(bobDoc)}?token=${tok}x`)).status,
            401,
            "a forged token",
          );
          assertEquals(
            (await s.request("GET", "/api/v1/entities/priv", {
              headers: { authorization: `Bearer ${tok}` },
            })).status,
            401,
            "a file token is for files only",
          );
        });

        await t.step(
          "thumbnails: made once in the bucket, served from it, removed with the original",
          async () => {
            const admin = await s.adminToken();
            assertStatus(
              await s.request("POST", "/api/v1/schemas", {
                token: admin,
                body: {
                  name: "pics",
                  type: "base",
                  fields: [
                    { name: "owner", type: "string" },
                    { name: "img", type: "file", thumbs: ["100x100"] },
                  ],
                  rules: {
                    list: { mode: "custom", expr: "record.owner == auth.id" },
                    get: { mode: "custom", expr: "record.owner == auth.id" },
                  },
                },
              }),
              201,
            );
            const picsId = s.app.schemas.get("pics")!.id;
            const images = sharedImages();
            try {
              const png = await images.make("png", 200, 400);
              const up = await sendForm(s, "POST", "/api/v1/entities/pics", [
                { name: "owner", value: "nobody" },
                { name: "img", filename: "photo.png", data: png },
              ], { token: admin });
              assertStatus(up, 201);
              const name = up.data.img as string;
              const path = `/api/files/pics/${name}`;
              const thumb = `${name}.100x100.thumb.png`;
              const key = `${PREFIX}/${picsId}/${thumb}`;
              // The original's protection: a guest sees a missing file.
              assertEquals(
                (await getFile(s, `${path}?thumb=100x100`)).status,
                404,
                "a guest",
              );
              assertEquals(
                await keysOf(s3, bucket, s, "pics"),
                [name],
                "nothing made for a guest",
              );
              const original = await getFile(s, path, { token: admin });
              const res = await fetch(`${s.url}${path}?thumb=100x100`, {
                headers: { authorization: `Bearer ${admin}` },
              });
              const made = new Uint8Array(await res.arrayBuffer());
              assertEquals(res.status, 200);
              assertEquals(res.headers.get("content-type"), "image/png");
              assertEquals(
                res.headers.get("cache-control"),
                original.headers.get("cache-control"),
                "the original's caching",
              );
              assertEquals(
                res.headers.get("x-content-type-options"),
                "nosniff",
              );
              const etag = res.headers.get("etag") ?? "";
              assert(etag && etag !== original.headers.get("etag"), etag);
              const info = await images.read(made, [[50, 25], [50, 75]]);
              assertEquals([info.width, info.height], [100, 100]);
              assertEquals(info.points.map(hue), ["red", "blue"]);
              // Stored beside its original, in the bucket, and recorded.
              assertEquals(
                (await keysOf(s3, bucket, s, "pics")).sort(),
                [name, thumb].sort(),
              );
              assertEquals(sha((await s3.get(bucket, key))!), sha(made));
              const rows = await s.app.storage.query(
                `SELECT "name" FROM "mb_files" WHERE "entity_id" = ? ORDER BY "name"`,
                [picsId],
              );
              assertEquals(
                rows.map((r) => String(r.name)),
                [name, thumb].sort(),
                "recorded; no temporary name left",
              );
              // Made once: the next request serves the object in the bucket
              // (swapped here for other bytes of the same length).
              const marker = made.slice();
              marker[marker.length - 1] ^= 0xff;
              await s3.put(bucket, key, marker);
              const again = await fetch(`${s.url}${path}?thumb=100x100`, {
                headers: { authorization: `Bearer ${admin}` },
              });
              assertEquals(again.status, 200);
              assertEquals(
                sha(new Uint8Array(await again.arrayBuffer())),
                sha(marker),
                "served from the bucket, not made again",
              );
              assertEquals(again.headers.get("etag"), etag);
              const nm = await getFile(s, `${path}?thumb=100x100`, {
                token: admin,
                headers: { "if-none-match": etag },
              });
              assertEquals(nm.status, 304);
              const part = await getFile(s, `${path}?thumb=100x100`, {
                token: admin,
                headers: { range: "bytes=0-7" },
              });
              assertEquals(part.status, 206);
              assertEquals(
                part.headers.get("content-range"),
                `bytes 0-7/${marker.length}`,
              );
              // A sweep keeps the thumbnail of a referenced file.
              await sweepFiles(
                s.app.storage,
                s.app.schemas,
                s.app.files,
                s.app.now,
                0,
              );
              assertEquals(
                (await keysOf(s3, bucket, s, "pics")).sort(),
                [name, thumb].sort(),
                "the sweep keeps it",
              );
              // Deleting the record removes the original and its thumbnail.
              assertStatus(
                await s.request(
                  "DELETE",
                  `/api/v1/entities/pics/${up.data.id}`,
                  { token: admin },
                ),
                204,
              );
              assertEquals(await keysOf(s3, bucket, s, "pics"), []);
              assertEquals(
                (await s.app.storage.query(
                  `SELECT "name" FROM "mb_files" WHERE "entity_id" = ?`,
                  [picsId],
                )).length,
                0,
                "the ledger forgets both",
              );
            } finally {
              if (db === DATABASES.at(-1)) {
                images.close();
                shared = undefined;
              }
            }
          },
        );

        await t.step("keys: no input leaves the prefix", async () => {
          const rec = await createWith(s, "pub", [
            { name: "cover", filename: "../../../../evil.png", data: PNG },
            { name: "att", filename: "..\\..\\x.txt", data: TXT },
            { name: "att", filename: "%2e%2e%2fy.txt", data: TXT },
          ]);
          for (const n of [rec.cover, ...(rec.att as string[])]) {
            assert(!String(n).includes(".."), `${n}`);
          }
          for (
            const name of [
              "..%2F..%2Fx_0123456789.txt",
              "%2e%2e",
              "x_0123456789.txt%2F..",
              ".moonbase-probe",
            ]
          ) {
            const g = await getFile(s, `/api/files/pub/${name}`);
            assertEquals(g.status, 404, name);
          }
          const all = await s3.keys(bucket);
          for (const k of all) {
            assert(k.startsWith(`${PREFIX}/`), `inside the prefix: ${k}`);
            const rest = k.slice(PREFIX.length + 1).split("/");
            assertEquals(rest.length, 2, `<entity>/<name>: ${k}`);
          }
        });

        await t.step(
          "the ledger decides: others' objects survive",
          async () => {
            // Someone else's objects: beside the prefix, in it, and in the
            // entity's own place under a name that looks like a stored one.
            const theirs = [
              "unrelated.txt",
              "shop/other/x.txt",
              `${PREFIX}/notes.txt`,
              `${PREFIX}/${pubId}/foreign_0123456789.png`,
            ];
            for (const k of theirs) await s3.put(bucket, k, "not Moonbase's");
            // Another database's files under the same prefix.
            const other = await startServer("sqlite", s3Config(s3, bucket));
            let otherKeys: string[];
            try {
              await createEntities(other, "pub");
              await createWith(other, "pub", [
                { name: "cover", filename: "o.txt", data: TXT },
              ]);
              otherKeys = await s3.keys(
                bucket,
                `${PREFIX}/${other.app.schemas.get("pub")!.id}/`,
              );
              assertEquals(otherKeys.length, 1);
            } finally {
              await other.close();
            }
            // Removals: a record's files, a dropped entity, a sweep of
            // everything unreferenced (no grace).
            const rec = await createWith(s, "pub", [
              { name: "cover", filename: "mine.txt", data: TXT },
            ]);
            assertStatus(
              await s.request("DELETE", `/api/v1/entities/pub/${rec.id}`, {
                token: await s.adminToken(),
              }),
              204,
            );
            await sweepFiles(
              s.app.storage,
              s.app.schemas,
              s.app.files,
              s.app.now,
              0,
            );
            assertStatus(
              await s.request("DELETE", "/api/v1/schemas/pub", {
                token: await s.adminToken(),
              }),
              204,
            );
            await sweepFiles(
              s.app.storage,
              s.app.schemas,
              s.app.files,
              s.app.now,
              0,
            );
            const left = await s3.keys(bucket);
            for (const k of [...theirs, ...otherKeys]) {
              assert(left.includes(k), `survives: ${k}`);
            }
            assertEquals(
              left.filter((k) => k.startsWith(`${PREFIX}/${pubId}/`)),
              [`${PREFIX}/${pubId}/foreign_0123456789.png`],
              "of the dropped entity, only the foreign object is left",
            );
          },
        );
      } finally {
        await s.close();
      }
    },
  });
}
