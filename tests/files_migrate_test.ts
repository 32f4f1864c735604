/**
 * `moonbase files migrate --to …`, run as the command a person runs (a
 * process of its own, its output not a terminal: plain lines), on both
 * databases: from disk to S3 and back. Every recorded file is copied and
 * verified; a run again copies nothing; a run cut off (no journal, a copy
 * that differs) resumes and mends it; the source is never changed; a file
 * the ledger records that the source lacks is skipped and told; a
 * thumbnail is copied too (and served from the new store), a temporary file
 * of a write under way is not; and the server started on the new store
 * serves every file identically (bytes and headers).
 *
 * @module
 */

import { createHash } from "node:crypto";
import { join } from "node:path";
import {
  assert,
  assertEquals,
  DATABASES,
  startServer,
  type TestServer,
} from "./_server.ts";
import {
  createEntities,
  createWith,
  MIB,
  PNG,
  TXT,
  walk,
} from "./_files_fixtures.ts";
import { hasS3, S3_KEY, startS3 } from "./_s3.ts";
import { tempName, thumbName } from "../lib/files/names.ts";

const MAIN = new URL("../main.ts", import.meta.url).pathname;

/** What a client sees of a file. */
async function served(s: TestServer, name: string): Promise<string> {
  const res = await fetch(`${s.url}/api/files/pub/${name}`);
  const body = new Uint8Array(await res.arrayBuffer());
  const h = res.headers;
  return JSON.stringify([
    res.status,
    createHash("sha256").update(body).digest("hex"),
    ...[
      "content-type",
      "content-length",
      "etag",
      "last-modified",
      "content-disposition",
      "cache-control",
    ].map((k) => h.get(k)),
  ]);
}

async function migrate(
  args: string[],
): Promise<{ code: number; out: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, ...args],
    env: {
      MB_S3_ACCESS_KEY_ID: S3_KEY.accessKeyId,
      MB_S3_SECRET_ACCESS_KEY: S3_KEY.secretAccessKey,
      NO_COLOR: "1",
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return {
    code: out.code,
    out: dec.decode(out.stdout) + dec.decode(out.stderr),
  };
}

for (const db of DATABASES) {
  Deno.test({
    name: `files migrate: disk to S3 and back, verified, resumable [${db}]`,
    ignore: !hasS3(),
    sanitizeOps: false,
    sanitizeResources: false,
    async fn(t) {
      const s3 = await startS3();
      const bucket = await s3.createBucket();
      const url = s3.filesUrl(bucket, "moved");
      const dataDir = await Deno.makeTempDir({ prefix: "mb_migrate_" });
      const base = { dataDir, maxUploadSize: 12 * MIB };
      let s = await startServer(db, base);
      const connection = s.connection;
      const dbArgs = db === "postgres"
        ? ["--database", "PSQL", "--connection", connection!]
        : [];
      const seen = new Map<string, string>();
      let pubId = "", thumb = "", temp = "";
      const thumbBytes = new TextEncoder().encode("a thumbnail made before");
      try {
        await createEntities(s, "pub");
        pubId = s.app.schemas.get("pub")!.id;
        const big = new Uint8Array(9 * MIB);
        for (let i = 0; i < big.length; i += 1000) big[i] = i % 251;
        for (
          const [filename, data] of [
            ["notes.txt", TXT],
            ["pic.png", PNG],
            ["big.bin", big],
          ] as const
        ) {
          const rec = await createWith(s, "pub", [
            { name: "cover", filename, data },
          ]);
          seen.set(rec.cover as string, await served(s, rec.cover as string));
        }
        // A row whose file a crash cut off: recorded, never written.
        await s.app.files.ledger.record(pubId, "lost_0123456789.txt");
        // A thumbnail of the PNG (made as a request would), and a
        // thumbnail's temporary file of a write under way.
        const pic = [...seen.keys()].find((n) => n.endsWith(".png"))!;
        thumb = thumbName(pic, "8x8", "png");
        await s.app.files.writeDerived(pubId, thumb, thumbBytes);
        temp = tempName(thumbName(pic, "16x16", "png"));
        await s.app.files.ledger.record(pubId, temp);
        await Deno.writeTextFile(join(dataDir, "files", pubId, temp), "half");
      } finally {
        await s.close();
      }
      const names = [...seen.keys()];
      const disk = join(dataDir, "files");
      const sourceBefore = await Promise.all(
        (await walk(disk)).map(async (p) =>
          [p, await Deno.readFile(join(disk, p))] as const
        ),
      );
      const run = (to: string, files = "local") =>
        migrate([
          "--dataDir",
          dataDir,
          ...dbArgs,
          "--files",
          files,
          "files",
          "migrate",
          "--to",
          to,
        ]);
      try {
        await t.step(
          "to S3: every file copied and verified, plain lines",
          async () => {
            const r = await run(url);
            assertEquals(r.code, 0, r.out);
            for (const n of names) {
              assert(
                r.out.includes(`copied ${pubId}/${n} (`),
                `${n}: ${r.out}`,
              );
            }
            assert(
              r.out.includes(
                `missing ${pubId}/lost_0123456789.txt (not in the source: skipped)`,
              ),
              r.out,
            );
            assert(r.out.includes(`copied ${pubId}/${thumb} (`), r.out);
            assert(!r.out.includes(temp), "no temporary file copied");
            assert(
              /4 copied \(9\.0 MiB\), 0 already there, 1 not in the source, 0 failed, of 5/
                .test(r.out),
              r.out,
            );
            assert(
              !r.out.includes("\r"),
              "no terminal bar when not a terminal",
            );
            assert(
              r.out.includes(`Done: start the server with --files ${url}`),
              r.out,
            );
            assertEquals(
              (await s3.keys(bucket, "moved/")).sort(),
              [...names, thumb].map((n) => `moved/${pubId}/${n}`).sort(),
            );
          },
        );

        await t.step("again: nothing copied", async () => {
          const r = await run(url);
          assertEquals(r.code, 0, r.out);
          assert(
            /0 copied \(0 B\), 4 already there, 1 not in the source/.test(
              r.out,
            ),
            r.out,
          );
        });

        await t.step(
          "cut off: no journal, a copy that differs: mended",
          async () => {
            for await (const e of Deno.readDir(dataDir)) {
              if (e.name.startsWith("files-migrate-")) {
                await Deno.remove(join(dataDir, e.name));
              }
            }
            const [first] = names;
            await s3.put(bucket, `moved/${pubId}/${first}`, "half a file");
            const r = await run(url);
            assertEquals(r.code, 0, r.out);
            assert(r.out.includes(`copied ${pubId}/${first}`), r.out);
            assert(/1 copied .*, 3 already there/.test(r.out), r.out);
          },
        );

        await t.step("the source is unchanged", async () => {
          const now = await walk(disk);
          assertEquals(now, sourceBefore.map(([p]) => p));
          for (const [p, bytes] of sourceBefore) {
            assertEquals(await Deno.readFile(join(disk, p)), bytes, p);
          }
        });

        let added = "";
        await t.step(
          "the server on S3 serves every file identically",
          async () => {
            s = await startServer(db, {
              ...base,
              connection,
              files: url,
              filesCredentials: S3_KEY,
            });
            try {
              for (const [n, before] of seen) {
                assertEquals(await served(s, n), before, n);
              }
              const pic = thumb.slice(0, thumb.indexOf(".8x8."));
              const t = await fetch(`${s.url}/api/files/pub/${pic}?thumb=8x8`, {
                headers: { authorization: `Bearer ${await s.adminToken()}` },
              });
              assertEquals(
                [t.status, new Uint8Array(await t.arrayBuffer())],
                [200, thumbBytes],
                "the thumbnail copied, served from S3",
              );
              const rec = await createWith(s, "pub", [
                { name: "cover", filename: "new.txt", data: "made on S3" },
              ]);
              added = rec.cover as string;
              seen.set(added, await served(s, added));
            } finally {
              await s.close();
            }
          },
        );

        await t.step(
          "back to disk, and the server there serves them all",
          async () => {
            const r = await run("local", url);
            assertEquals(r.code, 0, r.out);
            assert(r.out.includes(`copied ${pubId}/${added}`), r.out);
            assert(/1 copied .*, 4 already there/.test(r.out), r.out);
            s = await startServer(db, { ...base, connection });
            try {
              for (const [n, before] of seen) {
                assertEquals(await served(s, n), before, n);
              }
            } finally {
              await s.close();
            }
          },
        );

        await t.step("the store in use is refused as a target", async () => {
          const r = await run("local");
          assertEquals(r.code, 2);
          assert(r.out.includes("that is the store in use"), r.out);
        });
      } finally {
        await Deno.remove(dataDir, { recursive: true });
      }
    },
  });
}
