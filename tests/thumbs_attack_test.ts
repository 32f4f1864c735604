/**
 * Thumbnails under attack, on both databases: a progressive JPEG of very
 * many scans (a few kB that held a worker for minutes: each scan is a pass
 * over the whole image before libvips can stop it) answers the original
 * and makes nothing; a thumbnail whose original is deleted while it is
 * being made does not outlive it.
 *
 * @module
 */

import { join } from "node:path";
import {
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
  sendForm,
} from "./_files_fixtures.ts";
import { Images, progressiveJpeg } from "./_images.ts";
import { poll } from "./_wait.ts";

const PUBLIC = { mode: "public", expr: "" };

async function upload(
  s: TestServer,
  filename: string,
  data: Uint8Array,
): Promise<{ id: string; name: string }> {
  const r = await sendForm(s, "POST", "/api/v1/entities/pics", [
    { name: "img", filename, data },
  ], { token: await s.adminToken() });
  assertStatus(r, 201, `upload ${filename}`);
  return { id: r.data.id, name: r.data.img };
}

async function get(
  s: TestServer,
  path: string,
): Promise<{ status: number; bytes: Uint8Array }> {
  const res = await fetch(s.url + path);
  return {
    status: res.status,
    bytes: new Uint8Array(await res.arrayBuffer()),
  };
}

/** The names beside `name` (its thumbnails) on disk and in the ledger. */
async function thumbsOf(s: TestServer, name: string): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(entityDir(s, "pics"))) {
      if (e.name.startsWith(name + ".")) out.push(`disk ${e.name}`);
    }
  } catch { /* no directory */ }
  const rows = await s.app.storage.query(
    `SELECT "name" FROM "mb_files" WHERE "entity_id" = ?`,
    [s.app.schemas.get("pics")!.id],
  );
  for (const r of rows) {
    if (String(r.name).startsWith(name + ".")) out.push(`ledger ${r.name}`);
  }
  return out.sort();
}

forEachDb("thumbnails: attacks", async (t, db) => {
  const s = await startServer(db, CONFIG);
  const images = new Images();
  try {
    await createEntity(s, {
      name: "pics",
      type: "base",
      fields: [{ name: "img", type: "file", thumbs: ["100x100"] }],
      rules: { list: PUBLIC, get: PUBLIC },
    });

    await t.step(
      "a JPEG of very many scans answers the original, nothing made",
      async () => {
        // 64 scans: made as any progressive JPEG.
        const fine = await upload(s, "fine.jpg", progressiveJpeg(640, 640, 0));
        const made = await get(s, `/api/files/pics/${fine.name}?thumb=100x100`);
        assertEquals(made.status, 200);
        assertEquals((await images.read(made.bytes)).width, 100);
        // 127 scans (2.5 kB here; 2 600 scans over 40 megapixels held a
        // worker for minutes, past any deadline).
        const data = progressiveJpeg(640, 640, 1);
        const bomb = await upload(s, "bomb.jpg", data);
        for (let i = 0; i < 2; i++) {
          const g = await get(s, `/api/files/pics/${bomb.name}?thumb=100x100`);
          assertEquals(g.status, 200);
          assertEquals(g.bytes, data, "the original");
        }
        assertEquals(await thumbsOf(s, bomb.name), [], "nothing stored");
      },
    );

    await t.step(
      "a thumbnail made while its original is deleted does not outlive it",
      async () => {
        const { id, name } = await upload(
          s,
          "racy.png",
          await images.make("png", 200, 400),
        );
        const store = s.app.files;
        const read = store.read;
        // The record is deleted (and its file removed, with the thumbnails
        // it has so far) once the thumbnail's bytes are read.
        store.read = async (entityId, file, max) => {
          const bytes = await read.call(store, entityId, file, max);
          if (file === name) {
            const d = await s.request("DELETE", `/api/v1/entities/pics/${id}`, {
              token: await s.adminToken(),
            });
            assertStatus(d, 204, "delete");
            await poll("the original removed", async () => {
              try {
                await Deno.stat(join(entityDir(s, "pics"), name));
                return false;
              } catch {
                return true;
              }
            });
          }
          return bytes;
        };
        try {
          const g = await get(s, `/api/files/pics/${name}?thumb=100x100`);
          assertEquals(g.status, 404, "the original is gone");
        } finally {
          store.read = read;
        }
        assertEquals(await thumbsOf(s, name), [], "no thumbnail left");
        assertEquals((await get(s, `/api/files/pics/${name}`)).status, 404);
      },
    );
  } finally {
    images.close();
    await s.close();
  }
});
