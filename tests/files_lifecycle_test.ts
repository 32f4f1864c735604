/**
 * Files: what a PATCH does to a record's files. Replacing a file deletes the
 * old one, unmentioned file fields keep theirs, `null` or an empty text part
 * removes, a keep list plus uploads rewrites a `files` field; no JSON value or
 * text part can point a record at a file it does not have; and concurrent
 * writes to one record (appends, keep lists, replacements, a delete) end with
 * the files on disk exactly the ones the records reference.
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
  type TestServer,
} from "./_server.ts";
import {
  assertOnDisk,
  assertStored,
  CONFIG,
  count,
  createEntities,
  createWith,
  entityDir,
  filesSnapshot,
  getFile,
  listOf,
  type Part,
  record,
  sendForm,
  walk,
} from "./_files_fixtures.ts";

// Each step seeds its own record (cover A, att a b c) and changes only it.
forEachDb("files: replacing, keeping, removing, appending", async (t, db) => {
  const s = await startServer(db, CONFIG);
  try {
    await createEntities(s, "pub");
    const admin = await s.adminToken();
    /** A fresh record and its PATCH helpers. */
    const seed = async () => {
      const rec = await createWith(s, "pub", [
        { name: "cover", filename: "A.txt", data: "A" },
        { name: "att", filename: "a.txt", data: "a" },
        { name: "att", filename: "b.txt", data: "b" },
        { name: "att", filename: "c.txt", data: "c" },
      ]);
      const [a, b, c] = rec.att as string[];
      const path = `/api/v1/entities/pub/${rec.id}`;
      return {
        id: rec.id,
        A: rec.cover as string,
        a,
        b,
        c,
        patch: (parts: Part[]) =>
          sendForm(s, "PATCH", path, parts, { token: admin }),
        patchJson: (body: unknown) =>
          s.request("PATCH", path, { token: admin, body }),
      };
    };

    await t.step("replacing a file deletes the old one", async () => {
      const { A, a, b, c, patch } = await seed();
      const r = await patch([{ name: "cover", filename: "B.txt", data: "B" }]);
      assertStatus(r, 200, "replace cover");
      const B = r.data.cover;
      assertStored(B, "B");
      assert(B !== A, "a new name");
      assertEquals(r.data.att, [a, b, c], "att untouched");
      await assertOnDisk(s, "pub", [A], false, "the replaced file is deleted");
      await assertOnDisk(s, "pub", [B, a, b, c], true, "after replace");
      assertEquals(
        (await getFile(s, `/api/files/pub/${A}`)).status,
        404,
        "old file no longer served",
      );
    });

    await t.step("file fields not mentioned keep their files", async () => {
      const { A, a, b, c, patch, patchJson } = await seed();
      let r = await patch([{ name: "title", value: "only text" }]);
      assertStatus(r, 200, "text-only multipart PATCH");
      assertEquals(
        [r.data.cover, r.data.att],
        [A, [a, b, c]],
        "files kept when not mentioned",
      );
      r = await patchJson({ title: "json only" });
      assertStatus(r, 200, "JSON PATCH without file fields");
      assertEquals(
        [r.data.cover, r.data.att],
        [A, [a, b, c]],
        "files kept (JSON)",
      );
      await assertOnDisk(s, "pub", [A, a, b, c], true, "nothing deleted");
    });

    await t.step("null removes a file and deletes it", async () => {
      const { A, patchJson } = await seed();
      const r = await patchJson({ cover: null });
      assertStatus(r, 200, "cover: null");
      assertEquals(r.data.cover, null, "cover removed");
      await assertOnDisk(s, "pub", [A], false, "null deletes the file");
    });

    await t.step("an empty text part removes a file", async () => {
      const { A, patch } = await seed();
      let r = await patch([{ name: "cover", filename: "C.txt", data: "C" }]);
      assertStatus(r, 200, "a new cover");
      const C = r.data.cover;
      assertStored(C, "C");
      r = await patch([{ name: "cover", value: "" }]);
      assertStatus(r, 200, "an empty cover text part");
      assertEquals(r.data.cover, null, "an empty text part removes the file");
      await assertOnDisk(
        s,
        "pub",
        [A, C],
        false,
        "the removed cover is deleted",
      );
    });

    await t.step("text parts keep names, uploads are added", async () => {
      const { a, b, c, patch } = await seed();
      const r = await patch([
        { name: "att", value: a },
        { name: "att", value: c },
        { name: "att", filename: "d.txt", data: "d" },
      ]);
      assertStatus(r, 200, "keep a, c; add d");
      const d = r.data.att?.[2];
      assertStored(d, "d");
      assertEquals(r.data.att, [a, c, d], "kept names then the upload");
      await assertOnDisk(s, "pub", [b], false, "b not kept");
      await assertOnDisk(s, "pub", [a, c, d], true, "kept and added");
      assertEquals(
        await Deno.readTextFile(join(entityDir(s, "pub"), d)),
        "d",
        "d bytes",
      );
    });

    await t.step("a JSON keep list drops the others", async () => {
      const { a, b, c, patchJson } = await seed();
      const r = await patchJson({ att: [c] });
      assertStatus(r, 200, "JSON keep list");
      assertEquals(r.data.att, [c], "only c");
      await assertOnDisk(s, "pub", [a, b], false, "dropped by the JSON list");
      await assertOnDisk(s, "pub", [c], true, "kept by the JSON list");
    });

    await t.step("uploads alone are appended", async () => {
      const { a, b, c, patch } = await seed();
      const r = await patch([
        { name: "att", filename: "e.txt", data: "e" },
        { name: "att", filename: "f.txt", data: "f" },
      ]);
      assertStatus(r, 200, "append");
      assertEquals(r.data.att.length, 5, `appended: ${r.text}`);
      assertEquals(r.data.att.slice(0, 3), [a, b, c], "the old ones first");
      const [, , , e, f] = r.data.att;
      await assertOnDisk(s, "pub", [a, b, c, e, f], true, "after append");
    });

    await t.step("an empty list clears the field", async () => {
      const { id, A, a, b, c, patchJson } = await seed();
      const r = await patchJson({ att: [] });
      assertStatus(r, 200, "clear");
      assertEquals(r.data.att, [], "cleared");
      await assertOnDisk(s, "pub", [a, b, c], false, "cleared files deleted");
      const rec = await record(s, "pub", id);
      assertEquals([rec.cover, rec.att], [A, []], "stored");
    });
  } finally {
    await s.close();
  }
});

/** Writes that name files the record does not have: 400, nothing changes. */
type Bad = {
  name: string;
  /** The record written to ("owner", "other"), or a POST. */
  to: "owner" | "other" | "new";
  json?: (x: string, y: string) => unknown;
  parts?: (x: string, y: string) => Part[];
};
const BAD: Bad[] = [
  {
    name: "PATCH cover: another record's file",
    to: "other",
    json: (X) => ({ cover: X }),
  },
  {
    name: "PATCH att: another record's file",
    to: "other",
    json: (_, Y) => ({ att: [Y] }),
  },
  {
    name: "PATCH att: an invented name",
    to: "other",
    json: () => ({ att: ["made_up_abcdefghij.txt"] }),
  },
  {
    name: "PATCH cover: traversal",
    to: "other",
    json: () => ({ cover: "../../moonbase.db" }),
  },
  {
    name: "PATCH att: own plus unknown",
    to: "owner",
    json: (_, Y) => ({ att: [Y, "other_abcdefghij.txt"] }),
  },
  {
    name: "PATCH cover: own att file",
    to: "owner",
    json: (_, Y) => ({ cover: Y }),
  },
  {
    name: "POST cover: another record's file",
    to: "new",
    json: (X) => ({ title: "thief", cover: X }),
  },
  {
    name: "POST att: another record's file",
    to: "new",
    json: (_, Y) => ({ title: "thief", att: [Y] }),
  },
  {
    name: "multipart cover text part",
    to: "other",
    parts: (X) => [{ name: "cover", value: X }],
  },
  {
    name: "multipart att text part",
    to: "other",
    parts: (_, Y) => [{ name: "att", value: Y }],
  },
  {
    name: "multipart @jsonPayload",
    to: "other",
    parts: (
      X,
    ) => [{ name: "@jsonPayload", value: JSON.stringify({ cover: X }) }],
  },
  {
    name: "multipart att text part with an upload",
    to: "other",
    parts: (_, Y) => [
      { name: "att", value: Y },
      { name: "att", filename: "new.txt", data: "n" },
    ],
  },
];

// The rows share two records, which every row checks are left unchanged.
forEachDb("files: no reference to another record's files", async (t, db) => {
  const s = await startServer(db, CONFIG);
  try {
    await createEntities(s, "pub");
    const admin = await s.adminToken();
    const owner = await createWith(s, "pub", [
      { name: "cover", filename: "X.txt", data: "X" },
      { name: "att", filename: "Y.txt", data: "Y" },
    ]);
    const X = owner.cover as string, Y = (owner.att as string[])[0];
    const other = await createWith(s, "pub", [
      { name: "title", value: "other" },
    ]);
    for (const c of BAD) {
      await t.step(c.name, async () => {
        const n0 = await count(s, "pub");
        const snap = await filesSnapshot(s);
        const path = c.to === "new"
          ? "/api/v1/entities/pub"
          : `/api/v1/entities/pub/${c.to === "owner" ? owner.id : other.id}`;
        const method = c.to === "new" ? "POST" : "PATCH";
        const r = c.parts
          ? await sendForm(s, method, path, c.parts(X, Y), { token: admin })
          : await s.request(method, path, {
            token: admin,
            body: c.json!(X, Y),
          });
        assertStatus(r, 400, c.name);
        const o = await record(s, "pub", owner.id),
          t2 = await record(s, "pub", other.id);
        assertEquals([o.cover, o.att], [X, [Y]], "owner unchanged");
        assertEquals([t2.cover, listOf(t2.att)], [null, []], "other unchanged");
        assertEquals(await count(s, "pub"), n0, "no record created");
        assertEquals(await filesSnapshot(s), snap, "no file added or removed");
      });
    }
  } finally {
    await s.close();
  }
});

const CONC = "/api/v1/entities/conc";

/** Appends one file to a record's `att`. */
async function append(s: TestServer, id: string, n: string): Promise<Reply> {
  return await sendForm(s, "PATCH", `${CONC}/${id}`, [
    { name: "att", filename: `${n}.txt`, data: n },
  ], { token: await s.adminToken() });
}

/** Every reply is a success or a clean 4xx envelope, never a 5xx. */
function assertClean(rs: Reply[], what: string): void {
  for (const [i, r] of rs.entries()) {
    assert(
      r.status < 500,
      `${what} ${i}: got ${r.status} ${r.text.slice(0, 300)}`,
    );
    assert(
      r.status === 200 || r.status === 204 ||
        (r.status >= 400 && r.status < 500 && r.body?.status === r.status),
      `${what} ${i}: 200 or a clean 4xx, got ${r.status} ${
        r.text.slice(0, 200)
      }`,
    );
  }
}

/** Files on disk == the union of what the entity's records reference. */
async function assertConsistent(s: TestServer, msg: string): Promise<void> {
  const r = await s.request("GET", `${CONC}?limit=500`, {
    token: await s.adminToken(),
  });
  assertStatus(r, 200, "list conc");
  const refs: string[] = [];
  for (const rec of r.data.items) {
    refs.push(...listOf(rec.att) as string[]);
    if (rec.one) refs.push(rec.one);
  }
  assertEquals(
    await walk(entityDir(s, "conc")),
    [...refs].sort(),
    `${msg}: every file on disk is referenced and every reference exists`,
  );
  assertEquals(new Set(refs).size, refs.length, `${msg}: no duplicates`);
}

// Each step races on its own record; the disk check covers the entity, whose
// other records are settled by then.
forEachDb("files: concurrent uploads to one record", async (t, db) => {
  const s = await startServer(db, CONFIG);
  try {
    await createEntities(s, "conc");
    const admin = await s.adminToken();
    const fresh = async () => {
      const r = await s.request("POST", CONC, { token: admin, body: {} });
      assertStatus(r, 201, "conc record");
      return r.data.id as string;
    };

    await t.step("parallel appends", async () => {
      const id = await fresh();
      const replies = await Promise.all(
        Array.from({ length: 10 }, (_, i) => append(s, id, `c${i}`)),
      );
      assertClean(replies, "append");
      const ok = replies.filter((r) => r.status === 200);
      assert(ok.length >= 1, "some appends succeeded");
      const att = listOf((await record(s, "conc", id)).att) as string[];
      for (const r of ok) {
        const mine = (r.data.att as string[]).filter((n) => !att.includes(n));
        assertEquals(mine, [], "no acknowledged upload is lost");
      }
      assertEquals(att.length, ok.length, "one file per successful append");
      await assertConsistent(s, "after parallel appends");
    });

    await t.step("keep lists and replacements racing appends", async () => {
      const rec = await createWith(
        s,
        "conc",
        Array.from({ length: 5 }, (_, i) => ({
          name: "att",
          filename: `k${i}.txt`,
          data: `k${i}`,
        })),
      );
      const id = rec.id;
      const keep = (rec.att as string[]).slice(0, 3);
      const mixed = await Promise.all([
        ...Array.from({ length: 4 }, (_, i) => append(s, id, `m${i}`)),
        s.request("PATCH", `${CONC}/${id}`, {
          token: admin,
          body: { att: keep },
        }),
        ...Array.from(
          { length: 4 },
          (_, i) =>
            sendForm(s, "PATCH", `${CONC}/${id}`, [
              { name: "one", filename: `one${i}.txt`, data: `one${i}` },
            ], { token: admin }),
        ),
      ]);
      assertClean(mixed, "mixed");
      assertStored((await record(s, "conc", id)).one, "one replacement won");
      await assertConsistent(s, "after mixed writes");
    });

    await t.step("appends racing the record's deletion", async () => {
      const doomed = await fresh();
      const race = await Promise.all([
        ...Array.from({ length: 4 }, (_, i) => append(s, doomed, `d${i}`)),
        s.request("DELETE", `${CONC}/${doomed}`, { token: admin }),
        ...Array.from({ length: 4 }, (_, i) => append(s, doomed, `e${i}`)),
      ]);
      assertClean(race, "delete race");
      assertStatus(race[4], 204, "the delete succeeded");
      const r = await s.request("GET", `${CONC}/${doomed}`, { token: admin });
      assertStatus(r, 404, "deleted");
      await assertConsistent(s, "after appends racing a delete");
    });
  } finally {
    await s.close();
  }
});
