/**
 * The backup place contract (tests/_backup_place_contract.ts) on every
 * place: a folder, and an S3 bucket (Ceph's gateway, tests/_s3.ts) under a
 * prefix, with S3's smallest part size so that multipart uploads run. S3
 * adds what only it has: owners kept in the object's metadata, and a store
 * that does not answer (503 with `Retry-After`, nothing left behind).
 *
 * @module
 */

import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { FolderPlace } from "../lib/backup/folder_place.ts";
import { S3Place } from "../lib/backup/s3_place.ts";
import { MoonbaseError } from "../lib/errors.ts";
import {
  type OpenedPlace,
  runBackupPlaceContract,
} from "./_backup_place_contract.ts";
import { hasS3, S3_KEY, s3Proxy, startS3 } from "./_s3.ts";

async function walk(dir: string, base = ""): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      const rel = base ? `${base}/${e.name}` : e.name;
      if (e.isDirectory) out.push(...await walk(join(dir, e.name), rel));
      else out.push(rel);
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return out.sort();
}

const enc = new TextEncoder();

async function fillSmall(out: WritableStream<Uint8Array>): Promise<void> {
  const w = out.getWriter();
  await w.write(enc.encode("archive"));
  await w.close();
}

runBackupPlaceContract("folder", async () => {
  const top = await Deno.makeTempDir({ prefix: "mb_place_" });
  const dir = join(top, "data", "backups");
  const tempDir = join(top, "tmp");
  await Deno.mkdir(tempDir, { recursive: true });
  const place = new FolderPlace(dir);
  return {
    place,
    partSize: 0,
    tempDir,
    entries: () => walk(dir),
    async putForeign(path, bytes) {
      await Deno.mkdir(dirname(join(dir, path)), { recursive: true });
      await Deno.writeFile(join(dir, path), bytes);
    },
    async close() {
      await place.close();
      await Deno.remove(top, { recursive: true });
    },
  };
}, {
  extra: [{
    name: "madeBy: the folder is the data directory's, every backup in it too",
    async run(p) {
      await p.putForeign("copied.tar.gz", enc.encode("x"));
      assert.equal(await p.place.madeBy("copied.tar.gz", "any"), true);
    },
  }],
});

const PART = 5 * 1024 * 1024; // S3's smallest part
const PREFIX = "backups/p1";

interface S3Opened extends OpenedPlace {
  /** Switches the proxy in front of the gateway. */
  mode(m: "pass" | "stall" | "error403" | "error500"): void;
}

async function openS3(): Promise<S3Opened> {
  const s3 = await startS3();
  const bucket = await s3.createBucket();
  // A new bucket's first answers may be slow on a busy machine: not with
  // the place's short deadline.
  await s3.get(bucket, `${PREFIX}/warm-up`);
  await s3.keys(bucket);
  const proxy = s3Proxy(s3.endpoint);
  const tempDir = await Deno.makeTempDir({ prefix: "mb_place_s3_" });
  const warned: unknown[] = [];
  const place = new S3Place(
    {
      bucket,
      prefix: PREFIX,
      endpoint: proxy.endpoint,
      region: "us-east-1",
      pathStyle: true,
    },
    S3_KEY,
    {
      timeoutMs: 2000,
      partSize: PART,
      warn: (m, d) => warned.push([m, d]),
    },
  );
  return {
    place,
    partSize: PART,
    tempDir,
    mode: (m) => proxy.set(m),
    async entries() {
      const root = `${PREFIX}/`;
      const all = await s3.keys(bucket);
      assert.deepEqual(
        all.filter((k) => !k.startsWith(root)),
        [],
        "nothing outside the prefix",
      );
      return all.map((k) => k.slice(root.length)).sort();
    },
    putForeign: (path, bytes) => s3.put(bucket, `${PREFIX}/${path}`, bytes),
    async close() {
      await place.close();
      proxy.close();
      await Deno.remove(tempDir, { recursive: true });
    },
  };
}

function assertUnavailable(err: unknown): true {
  assert.ok(err instanceof MoonbaseError, String(err));
  assert.equal(err.code, "unavailable");
  assert.equal(err.headers["retry-after"], "5");
  assert.match(err.message, /Cannot reach the backup store/);
  return true;
}

runBackupPlaceContract("s3", openS3, {
  ignore: !hasS3(),
  extra: [
    {
      name: "madeBy: only what that owner wrote; a foreign object is nobody's",
      async run(p) {
        await p.place.write("mine.tar.gz", "db-a", fillSmall);
        await p.putForeign("mb_auto_20200101T000000Z.tar.gz", enc.encode("x"));
        assert.equal(await p.place.madeBy("mine.tar.gz", "db-a"), true);
        assert.equal(await p.place.madeBy("mine.tar.gz", "db-b"), false);
        assert.equal(
          await p.place.madeBy("mb_auto_20200101T000000Z.tar.gz", "db-a"),
          false,
        );
      },
    },
    {
      name: "S3 refusing or not answering: 503 with Retry-After, nothing left",
      async run(base) {
        const p = base as S3Opened;
        await p.place.write("kept.tar.gz", "db-a", fillSmall);
        for (const mode of ["error500", "error403", "stall"] as const) {
          p.mode(mode);
          // At once: in a stall, each waits out the deadline on its own.
          await Promise.all([
            assert.rejects(p.place.list(), assertUnavailable),
            assert.rejects(p.place.stat("kept.tar.gz"), assertUnavailable),
            assert.rejects(p.place.read("kept.tar.gz"), assertUnavailable),
            assert.rejects(
              p.place.local("kept.tar.gz", p.tempDir),
              assertUnavailable,
            ),
            assert.rejects(p.place.remove("kept.tar.gz"), assertUnavailable),
            assert.rejects(
              p.place.write("new.tar.gz", "db-a", fillSmall),
              assertUnavailable,
            ),
          ]);
          assert.equal(p.place.state(), "unavailable");
          p.mode("pass");
          assert.deepEqual(await p.entries(), ["kept.tar.gz"], mode);
          assert.deepEqual(
            [...Deno.readDirSync(p.tempDir)],
            [],
            `${mode}: no download left`,
          );
        }
      },
    },
    {
      name: "S3 failing mid-upload (in parts): 503, the upload aborted",
      async run(base) {
        const p = base as S3Opened;
        let sent = 0;
        await assert.rejects(
          p.place.write("mid.tar.gz", "db-a", async (out) => {
            const w = out.getWriter();
            const chunk = new Uint8Array(256 * 1024);
            for (;;) {
              // After the first part went out, the store starts failing.
              if (sent === PART + chunk.length) p.mode("error500");
              await w.write(chunk);
              sent += chunk.length;
            }
          }),
          assertUnavailable,
        );
        p.mode("pass");
        assert.ok(sent > PART, "a part went out first");
        assert.deepEqual(await p.entries(), []);
      },
    },
  ],
});
