/**
 * Attack on the data directory's binding (lib/files/data_dir.ts): a copy
 * of a PostgreSQL database (restored from a dump, or made from it as a
 * template: a staging copy of production) carries the original's
 * `database_id` in `mb_meta`, and the binding compared only that id. A
 * server of the copy pointed at the original's data directory started, and
 * its ledger (the original's, copied) let it delete the original's files:
 * deleting a record on the copy removed the file the original still serves.
 * The copy must be refused as another database, unless `--rebindDataDir`.
 *
 * @module
 */

import postgres from "postgres";
import { join } from "node:path";
import { createApp } from "../mod.ts";
import {
  assert,
  assertEquals,
  assertStatus,
  startServer,
  TEST_JWT_SECRET,
} from "./_server.ts";
import { hasPostgres } from "./_pg.ts";
import {
  createEntity,
  createWith,
  exists,
  getFile,
  PUBLIC,
} from "./_files_fixtures.ts";

/** A copy of the database at `url` (CREATE DATABASE … TEMPLATE). */
async function copyOf(url: string): Promise<string> {
  const u = new URL(url);
  const source = u.pathname.slice(1);
  const name = `${source}_copy`;
  u.pathname = "/postgres";
  const admin = postgres(u.toString(), { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE ${source}`);
  } finally {
    await admin.end();
  }
  u.pathname = `/${name}`;
  return u.toString();
}

Deno.test({
  name:
    "attack: a copy of a PostgreSQL database is refused on the original's data dir",
  ignore: !hasPostgres(),
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const dataDir = await Deno.makeTempDir({ prefix: "mb_datadir_copy_" });
    try {
      let s = await startServer("postgres", { dataDir });
      const original = s.connection!;
      let rec: { id: string; doc: string }, docsId: string;
      try {
        docsId = (await createEntity(s, {
          name: "docs",
          type: "base",
          fields: [{ name: "doc", type: "file" }],
          rules: { get: PUBLIC, list: PUBLIC, delete: PUBLIC },
        })).id;
        rec = await createWith(s, "docs", [
          { name: "doc", filename: "kept.txt", data: "kept" },
        ]) as { id: string; doc: string };
      } finally {
        await s.close();
      }
      const path = join(dataDir, "files", docsId, rec.doc);
      const copy = await copyOf(original);

      await t.step("the copy is refused, naming both", async () => {
        let message = "";
        try {
          const app = await createApp({
            quiet: true,
            jwtSecret: TEST_JWT_SECRET,
            dataDir,
            database: "PSQL",
            connection: copy,
          });
          // Before the fix it started: what the copy could then do.
          const r = await app.handler(
            new Request(`http://x/api/v1/entities/docs/${rec.id}`, {
              method: "DELETE",
            }),
          );
          await app.close();
          message = `started (a DELETE answered ${r.status})`;
        } catch (err) {
          message = err instanceof Error ? err.message : String(err);
        }
        assert(
          message.startsWith(`Cannot use data dir ${dataDir}: it belongs to`),
          message,
        );
        assert(message.includes("copy"), `says it is a copy: ${message}`);
        assert(!message.includes("\n"), "one line");
        assert(message.includes("--rebindDataDir"), message);
        assert(await exists(path), "the original's file is still there");
      });

      await t.step("the original still serves its file", async () => {
        s = await startServer("postgres", { dataDir, connection: original });
        try {
          const g = await getFile(s, `/api/files/docs/${rec.doc}`);
          assertEquals([g.status, g.text], [200, "kept"]);
        } finally {
          await s.close();
        }
      });

      await t.step("--rebindDataDir takes the directory over", async () => {
        s = await startServer("postgres", {
          dataDir,
          connection: copy,
          rebindDataDir: true,
        });
        try {
          const r = await s.request("GET", "/api/v1/entities/docs");
          assertStatus(r, 200);
        } finally {
          await s.close();
        }
      });
    } finally {
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
});
