/**
 * NUL characters in values, filters, ids and identities (SQLite refuses them
 * as PostgreSQL does): a clear 400, never a 500, nothing half-written.
 *
 * One server and one fixture per database; the rows write nothing (each is
 * refused, or what one stores is removed) and the fixture's counts are
 * checked after every row.
 *
 * @module
 */

import assert from "node:assert/strict";
import { forEachDb, startServer, type TestServer } from "./_server.ts";
import { type Fx, notesFixture, PW, rule } from "./_notes_fixtures.ts";

/** Files under the data directory's file store. */
async function storedFiles(s: TestServer): Promise<number> {
  let n = 0;
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(dir)) {
      if (e.isDirectory) await walk(`${dir}/${e.name}`);
      else n++;
    }
  };
  await walk(`${s.dataDir}/files`).catch(() => {});
  return n;
}

interface NulRow {
  name: string;
  method: string;
  path: (f: Fx) => string;
  body?: (f: Fx) => unknown;
  form?: (f: Fx) => FormData;
  token?: (f: Fx) => string;
  /** Statuses accepted (never 500). */
  status: number[];
}

const NUL = "a\u0000b";
const q = encodeURIComponent;

const nulRows: NulRow[] = [
  {
    name: "create with a NUL in a string",
    method: "POST",
    path: () => "/api/v1/entities/notes",
    body: () => ({ title: NUL }),
    status: [400],
  },
  {
    name: "update with a NUL in one field, a good other field",
    method: "PATCH",
    path: (f) => `/api/v1/entities/notes/${f.note.id}`,
    body: () => ({ title: NUL, meta: { ok: 1 } }),
    status: [400],
  },
  {
    name: "update with a NUL in a relation",
    method: "PATCH",
    path: (f) => `/api/v1/entities/notes/${f.note.id}`,
    body: () => ({ title: "changed", owner: NUL }),
    status: [400],
  },
  {
    name: "create with a NUL inside a JSON value",
    method: "POST",
    path: () => "/api/v1/entities/notes",
    body: () => ({ title: "ok", meta: { k: NUL } }),
    status: [201, 400],
  },
  {
    name: "multipart create with a file and a NUL field",
    method: "POST",
    path: () => "/api/v1/entities/notes",
    form: () => {
      const form = new FormData();
      form.append("title", NUL);
      form.append("doc", new Blob(["x"]), "a.txt");
      return form;
    },
    status: [400],
  },
  {
    name: "filter with a NUL",
    method: "GET",
    path: () => `/api/v1/entities/notes?filter=${q(`title = "${NUL}"`)}`,
    status: [400],
  },
  {
    name: "filter with a NUL in a like",
    method: "GET",
    path: () => `/api/v1/entities/notes?filter=${q(`title ~ "${NUL}"`)}`,
    status: [400],
  },
  {
    name: "sort with a NUL",
    method: "GET",
    path: () => `/api/v1/entities/notes?sort=${q(NUL)}`,
    status: [400],
  },
  {
    name: "get by an id with a NUL",
    method: "GET",
    path: () => `/api/v1/entities/notes/${q(NUL)}`,
    status: [400, 404],
  },
  {
    name: "delete by an id with a NUL",
    method: "DELETE",
    path: () => `/api/v1/entities/notes/${q(NUL)}`,
    status: [400, 404],
  },
  {
    name: "login with a NUL identity",
    method: "POST",
    path: () => "/api/v1/auth/members/login",
    body: () => ({ identity: `m${NUL}@example.com`, password: PW }),
    status: [400, 401],
  },
  {
    name: "login with a NUL id identity",
    method: "POST",
    path: () => "/api/v1/auth/members/login",
    body: () => ({ identity: NUL, password: PW }),
    status: [400, 401],
  },
  {
    name: "signup with a NUL email",
    method: "POST",
    path: () => "/api/v1/entities/members",
    body: () => ({ email: `n${NUL}@example.com`, password: PW }),
    status: [400],
  },
  {
    name: "own update: NUL nick with a new password",
    method: "PATCH",
    path: (f) => `/api/v1/entities/members/${f.member.id}`,
    token: (f) => f.user,
    body: () => ({ nick: NUL, password: "new-password-2", oldPassword: PW }),
    status: [400],
  },
  {
    name: "admin update: NUL email with a new password",
    method: "PATCH",
    path: (f) => `/api/v1/entities/members/${f.member.id}`,
    token: (f) => f.admin,
    body: () => ({ email: `x${NUL}@example.com`, password: "new-password-2" }),
    status: [400],
  },
  {
    name: "admin update: NUL nick with a new password",
    method: "PATCH",
    path: (f) => `/api/v1/entities/members/${f.member.id}`,
    token: (f) => f.admin,
    body: () => ({ nick: NUL, password: "new-password-2" }),
    status: [400],
  },
  {
    name: "rule trial as a user id with a NUL",
    method: "POST",
    path: () => "/api/v1/sys/rules/test",
    token: (f) => f.admin,
    body: () => ({
      entity: "notes",
      op: "get",
      rule: rule("auth"),
      as: { entity: "members", id: NUL },
    }),
    status: [400, 404],
  },
  {
    name: "entity name with a NUL",
    method: "GET",
    path: () => `/api/v1/entities/${q("notes\u0000")}`,
    status: [404],
  },
];

forEachDb("NUL characters in every input", async (t, db) => {
  const s = await startServer(db);
  try {
    const f = await notesFixture(s);
    const counts = async () => ({
      notes: await s.app.schemas.get("notes")!.countRecords(),
      members: await s.app.schemas.get("members")!.countRecords(),
      files: await storedFiles(s),
    });
    const before = await counts();
    const members = s.app.schemas.get("members")!;
    const hash = async () =>
      (await members.rowFromCols(f.member.id, ["id"]))?.password;
    const firstHash = await hash();
    for (const row of nulRows) {
      await t.step(row.name, async () => {
        await s.app.storage.run(`DELETE FROM "mb_ratelimit"`);
        const r = await s.request(row.method, row.path(f), {
          token: row.token?.(f),
          ...(row.form ? { raw: row.form(f) } : { body: row.body?.(f) }),
        });
        assert.ok(row.status.includes(r.status), `${r.status} ${r.text}`);
        if (r.status === 201) {
          // Stored as given (SQLite keeps JSON escapes); read back intact.
          assert.equal(r.data.meta.k, NUL);
          await s.app.schemas.get("notes")!.remove(r.data.id);
        }
        assert.deepEqual(await counts(), before);
        const note = await s.request(
          "GET",
          `/api/v1/entities/notes/${f.note.id}`,
        );
        assert.equal(note.data.title, "n1");
        assert.equal(note.data.owner, null);
        // Nothing revoked, nothing changed in the member.
        const me = await s.request("POST", "/api/v1/files/token", {
          token: f.user,
        });
        assert.equal(me.status, 200, me.text);
        assert.equal(await hash(), firstHash);
        const m = await members.read(f.member.id);
        assert.equal(m?.email, "m@example.com");
        assert.equal(m?.nick ?? null, null);
      });
    }
  } finally {
    await s.close();
  }
});
