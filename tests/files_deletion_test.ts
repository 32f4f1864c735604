/**
 * Files: when files go away. Deleting a record, a cascade from its parent,
 * dropping a file field or the entity removes them; renaming the entity
 * keeps them; at start the server sweeps the files its ledger records that
 * no record references (and nothing it did not record).
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
  assertOnDisk,
  assertStored,
  CONFIG,
  createEntities,
  createEntity,
  createWith,
  entityDir,
  exists,
  getFile,
  PUBLIC,
  sendForm,
  walk,
} from "./_files_fixtures.ts";

/** An entity `name` with a `files` field `tf` and a `file` field `gone`. */
async function tempEntity(s: TestServer, name: string) {
  const schema = await createEntity(s, {
    name,
    type: "base",
    fields: [{ name: "tf", type: "files" }, { name: "gone", type: "file" }],
    rules: { get: PUBLIC },
  });
  const goneId = (schema.fields as { name: string; id: string }[])
    .find((f) => f.name === "gone")?.id;
  assert(goneId, "field id of gone");
  const up = await createWith(s, name, [
    { name: "tf", filename: "t.txt", data: "t" },
    { name: "tf", filename: "u.txt", data: "u" },
    { name: "gone", filename: "g.txt", data: "g" },
  ]);
  const dir = join(s.dataDir, "files", schema.id);
  assertEquals((await walk(dir)).length, 3, "temp files on disk");
  return { id: schema.id, goneId, tf: up.tf as string[], dir };
}

// Each step makes the records or entity it deletes and checks only those.
forEachDb(
  "files: deleting records and entities removes files",
  async (t, db) => {
    const s = await startServer(db, CONFIG);
    try {
      await createEntities(s, "pub", "parents", "kids");
      const admin = await s.adminToken();

      await t.step("deleting a record removes its files", async () => {
        const rec = await createWith(s, "pub", [
          { name: "cover", filename: "del.txt", data: "x" },
          { name: "att", filename: "d1.txt", data: "1" },
          { name: "att", filename: "d2.txt", data: "2" },
        ]);
        const names = [rec.cover as string, ...(rec.att as string[])];
        await assertOnDisk(s, "pub", names, true, "before delete");
        const r = await s.request("DELETE", `/api/v1/entities/pub/${rec.id}`, {
          token: admin,
        });
        assertStatus(r, 204, "delete record");
        await assertOnDisk(
          s,
          "pub",
          names,
          false,
          "deleting a record removes its files",
        );
        assertEquals(
          (await getFile(s, `/api/files/pub/${names[0]}`)).status,
          404,
          "no longer served",
        );
      });

      await t.step("a cascade removes the children's files", async () => {
        const parent = await createWith(s, "parents", [
          { name: "pf", filename: "p.txt", data: "p" },
        ]);
        const parent2 = await createWith(s, "parents", [
          { name: "pf", filename: "p2.txt", data: "p2" },
        ]);
        const kid = async (pid: string, n: string) => {
          const k = await sendForm(s, "POST", "/api/v1/entities/kids", [
            { name: "parent", value: pid },
            { name: "kf", filename: `${n}.txt`, data: n },
          ], { token: admin });
          assertStatus(k, 201, `kid ${n}`);
          assertStored(k.data.kf, `kid ${n} file`);
          return k.data as { id: string; kf: string };
        };
        const k1 = await kid(parent.id, "k1"),
          k2 = await kid(parent.id, "k2"),
          k3 = await kid(parent2.id, "k3");
        let r = await s.request(
          "DELETE",
          `/api/v1/entities/parents/${parent.id}`,
          { token: admin },
        );
        assertStatus(r, 204, "delete parent");
        await assertOnDisk(
          s,
          "parents",
          [parent.pf as string],
          false,
          "parent's file",
        );
        await assertOnDisk(
          s,
          "kids",
          [k1.kf, k2.kf],
          false,
          "cascaded children's files",
        );
        await assertOnDisk(
          s,
          "kids",
          [k3.kf],
          true,
          "an unrelated child's file",
        );
        await assertOnDisk(
          s,
          "parents",
          [parent2.pf as string],
          true,
          "an unrelated parent's file",
        );
        r = await s.request("GET", `/api/v1/entities/kids/${k1.id}`, {
          token: admin,
        });
        assertStatus(r, 404, "child deleted");
      });

      await t.step("renaming an entity keeps its files", async () => {
        const temp = await tempEntity(s, "temp");
        const r = await s.request("PATCH", `/api/v1/schemas/${temp.id}`, {
          token: admin,
          body: { name: "temp2" },
        });
        assertStatus(r, 200, "rename temp");
        let g = await getFile(s, `/api/files/temp2/${temp.tf[0]}`);
        assertEquals(
          [g.status, g.text],
          [200, "t"],
          "served under the new name",
        );
        g = await getFile(s, `/api/files/temp/${temp.tf[0]}`);
        assertEquals(g.status, 404, "not under the old name");
      });

      await t.step("dropping a file field removes its files", async () => {
        const temp = await tempEntity(s, "temp_field");
        const r = await s.request("PATCH", `/api/v1/schemas/${temp.id}`, {
          token: admin,
          body: { fields: [{ id: temp.goneId, op: "delete" }] },
        });
        assertStatus(r, 200, "drop the field gone");
        assertEquals(
          (await walk(temp.dir)).sort(),
          [...temp.tf].sort(),
          "the dropped field's file is removed, the others stay",
        );
      });

      await t.step("dropping an entity removes its directory", async () => {
        const temp = await tempEntity(s, "temp_drop");
        const r = await s.request("DELETE", `/api/v1/schemas/${temp.id}`, {
          token: admin,
        });
        assertStatus(r, 204, "drop temp");
        assertEquals(
          await exists(temp.dir),
          false,
          "the entity's directory is removed",
        );
      });
    } finally {
      await s.close();
    }
  },
);

Deno.test({
  name:
    "files: sweep on start removes unreferenced recorded files, nothing else [sqlite]",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "mb_files_sweep_" });
    try {
      let s = await startServer("sqlite", { dataDir });
      let kept: string[], dir: string, strays: string[], foreign: string[];
      try {
        await createEntity(s, {
          name: "docs",
          type: "base",
          fields: [{ name: "one", type: "file" }, {
            name: "many",
            type: "files",
          }],
          rules: { get: PUBLIC },
        });
        const r = await createWith(s, "docs", [
          { name: "one", filename: "keep.txt", data: "keep" },
          { name: "many", filename: "k1.txt", data: "k1" },
          { name: "many", filename: "k2.txt", data: "k2" },
        ]);
        kept = [r.one as string, ...(r.many as string[])];
        dir = entityDir(s, "docs");
        const docs = s.app.schemas.get("docs")!.id;
        // Recorded in the ledger, as an upload a crash cut off leaves them.
        strays = ["stray_abcdefghij.txt", "k1_ZZZZZZZZZZ.txt"];
        for (const n of strays) {
          await s.app.files.ledger.record(docs, n);
          await Deno.writeTextFile(join(dir, n), "stray");
        }
        // Not recorded: this database did not write them.
        foreign = ["junk.bin", "other_abcdefghij.txt"];
        for (const n of foreign) {
          await Deno.writeTextFile(join(dir, n), "foreign");
        }
        for (const d of ["deadbeef-gone-entity", "not-this-databases"]) {
          await Deno.mkdir(join(dataDir, "files", d), { recursive: true });
          await Deno.writeTextFile(
            join(dataDir, "files", d, "x_abcdefghij.txt"),
            "x",
          );
        }
        await s.app.files.ledger.record(
          "deadbeef-gone-entity",
          "x_abcdefghij.txt",
        );
        // The crash was an hour ago: past the grace kept for uploads that
        // another server on this directory may still be receiving.
        await s.app.storage.run(
          `UPDATE "mb_files" SET "created" = "created" - 3600000`,
        );
      } finally {
        await s.close();
      }
      s = await startServer("sqlite", { dataDir });
      try {
        for (const n of strays) {
          assertEquals(await exists(join(dir, n)), false, `stray ${n} swept`);
        }
        for (const n of kept) {
          assertEquals(
            await exists(join(dir, n)),
            true,
            `referenced ${n} kept`,
          );
        }
        assertEquals(
          (await walk(dir)).sort(),
          [...kept, ...foreign].sort(),
          "referenced and unrecorded files remain",
        );
        assertEquals(
          await exists(join(dataDir, "files", "deadbeef-gone-entity")),
          false,
          "directory of a dropped entity, emptied of its recorded files, removed",
        );
        assertEquals(
          await walk(join(dataDir, "files", "not-this-databases")),
          ["x_abcdefghij.txt"],
          "directory of an entity this database does not know kept",
        );
        const g = await getFile(s, `/api/files/docs/${kept[0]}`);
        assertEquals(
          [g.status, g.text],
          [200, "keep"],
          "a kept file is still served",
        );
      } finally {
        await s.close();
      }
    } finally {
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
});
